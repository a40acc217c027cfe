"""Connection data of the sparse mapping unit, in numpy.

The method is that of "Neural network operation device and method" (Cambricon),
summarised in docs/sparse-mapping.md, section 2 "Method"; section 3 "In nnx:
connection data as arrays" describes this module with a worked example.

This module is the numpy meaning of the mapping unit; the `sparse` dialect's
interpreter (nnx/interp/sparse_impls.py), the `sparsify` pass and the simulator's
mapping unit all call it. Everything is vectorised over "strings": an array of any
shape `(..., L)` holds one connection string of length `L` per index of its leading
dimensions.

Forms
-----
* **direct index**: a string of 0 and 1, `uint8`; 1 where ``|x| > threshold`` (the
  input neuron, or the connection between the weight's input and output neuron,
  exists), 0 where ``|x| <= threshold``.
* **stride index**: the distance of each kept element from the previous kept element;
  the first one is its distance from position 0 (i.e. its position). Stored left-packed
  in an `int32` array of the same shape `(..., L)` as the direct string, padded with
  ``PAD = -1`` after the last stride (a string of `L` elements has at most `L` kept
  ones, so the storage is bounded like a hardware buffer).

Weight orders
-------------
For a weight matrix ``W[out, in]`` (conv weights ``[out, ...]`` are flattened to
``[out, prod(...)]``):

* ``per_output``: one string per output neuron over all input neurons, shape ``[out, in]``;
* ``per_input``: one string per input neuron over all output neurons, shape ``[in, out]``.

`reorder` converts between them. The original method defines the stride index of
weights per output neuron (the distance from each input neuron connected to that output
neuron to the previous connected one); the per-input stride index is the same rule
applied to per-input strings (docs/sparse-mapping.md, section 3, "Weight orders").

Combining
---------
* both direct: AND;
* both stride: turn each string into positions (prefix sums: each element plus all
  the elements before it in its string), keep the positions present in both, sort
  ascending, and subtract from each the next smaller one;
* mixed: either convert the stride one to direct and AND (``mixed="direct"``) or
  convert the direct one to stride and take the stride path (``mixed="stride"``).

Selecting
---------
`select` is the mapping unit's data processing unit: from the combined connection data
it gathers the input neurons and weights that both survive, per output neuron, as a
compressed-row `Selection`; `select_packed` gives the same as fixed-shape left-packed
arrays (what the `sparse.select` op returns).

Group pruning
-------------
`group_prune` splits neurons into M groups (weights into N), and deletes a group when
its count of elements with ``|x| <= threshold`` exceeds a count threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DIRECT = "direct"
STRIDE = "stride"
FORMS = (DIRECT, STRIDE)

NEURON = "neuron"
PER_OUTPUT = "per_output"
PER_INPUT = "per_input"
ORDERS = (NEURON, PER_OUTPUT, PER_INPUT)

PAD = -1
DIRECT_DTYPE = np.dtype(np.uint8)
STRIDE_DTYPE = np.dtype(np.int32)


class ConnectionDataError(ValueError):
    """Malformed connection data (bad form, padding in the middle, position overflow)."""


def storage_dtype(form: str) -> np.dtype:
    """The numpy dtype holding connection data of `form`."""
    if form == DIRECT:
        return DIRECT_DTYPE
    if form == STRIDE:
        return STRIDE_DTYPE
    raise ConnectionDataError(f"unknown connection-data form {form!r} (direct|stride)")


# ----------------------------------------------------------------------------------
# Building connection data (docs/sparse-mapping.md, section 2 "Method")
# ----------------------------------------------------------------------------------


def direct_index(x: np.ndarray, threshold: float) -> np.ndarray:
    """Direct index of `x`: ``uint8``, 1 where ``|x| > threshold``."""
    return (np.abs(np.asarray(x)) > threshold).astype(DIRECT_DTYPE)


def stride_index(x: np.ndarray, threshold: float) -> np.ndarray:
    """Stride index of `x` along its last axis; padded with -1."""
    return direct_to_stride(direct_index(x, threshold))


def neuron_connection(x: np.ndarray, threshold: float, form: str = DIRECT) -> np.ndarray:
    """Connection data of input neurons `x[..., in]`: one string per leading index."""
    d = direct_index(x, threshold)
    return d if form == DIRECT else _to_form(d, DIRECT, form)


def as_matrix(w: np.ndarray) -> np.ndarray:
    """Weights ``[out, ...]`` as an ``[out, in]`` matrix, one row per output neuron (conv
    kernels flattened)."""
    w = np.asarray(w)
    if w.ndim < 2:
        raise ConnectionDataError(f"weights need rank >= 2, got shape {w.shape}")
    return w.reshape(w.shape[0], -1)


def weight_connection(
    w: np.ndarray, threshold: float, form: str = DIRECT, order: str = PER_OUTPUT
) -> np.ndarray:
    """Connection data of weights ``W[out, ...]``.

    ``per_output``: shape ``[out, in]``, the connections of each output neuron to all
    input neurons; ``per_input``: shape ``[in, out]``, of each input neuron to all
    output neurons.
    """
    d = direct_index(as_matrix(w), threshold)
    if order == PER_INPUT:
        d = np.ascontiguousarray(d.T)
    elif order != PER_OUTPUT:
        raise ConnectionDataError(f"weight order must be per_output or per_input, not {order!r}")
    return d if form == DIRECT else direct_to_stride(d)


# ----------------------------------------------------------------------------------
# Conversions
# ----------------------------------------------------------------------------------


def _rows(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 0:
        raise ConnectionDataError("connection data needs rank >= 1")
    return a.reshape(-1, a.shape[-1])


def _pack(
    rows: np.ndarray, values: np.ndarray, n_rows: int, length: int, dtype: np.dtype, pad: int
) -> np.ndarray:
    """Left-pack `values` (grouped by ascending `rows`) into an ``[n_rows, length]`` array."""
    out = np.full((n_rows, length), pad, dtype=dtype)
    if rows.size:
        counts = np.bincount(rows, minlength=n_rows)
        starts = np.cumsum(counts) - counts
        ranks = np.arange(rows.size) - np.repeat(starts, counts)
        out[rows, ranks] = values
    return out


def _differences(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Stride of each kept position: minus the previous one in its row; the first as is."""
    stride = positions.copy()
    if positions.size > 1:
        stride[1:] -= positions[:-1]
        first = np.empty(rows.shape, dtype=bool)
        first[0] = True
        first[1:] = rows[1:] != rows[:-1]
        stride[first] = positions[first]
    return stride


def direct_to_stride(d: np.ndarray) -> np.ndarray:
    """Direct index -> stride index (same shape, int32, padded with -1)."""
    d = np.asarray(d)
    flat = _rows(d)
    rows, cols = np.nonzero(flat)  # row-major: ascending rows, then ascending positions
    stride = _differences(rows, cols)
    return _pack(rows, stride, flat.shape[0], flat.shape[1], STRIDE_DTYPE, PAD).reshape(d.shape)


def stride_counts(s: np.ndarray) -> np.ndarray:
    """Number of kept elements of each stride string (shape ``s.shape[:-1]``)."""
    return np.count_nonzero(np.asarray(s) >= 0, axis=-1)


def check_stride(s: np.ndarray) -> None:
    """Raise ConnectionDataError unless `s` is well-formed stride connection data."""
    s = np.asarray(s)
    if s.dtype.kind not in "iu":
        raise ConnectionDataError(f"stride connection data must be integers, got {s.dtype}")
    flat = _rows(s)
    valid = flat >= 0
    if np.any(flat < PAD):
        raise ConnectionDataError("stride connection data has a negative stride")
    # padding only after the last stride: valid must be non-increasing along each row
    if flat.shape[1] > 1 and np.any(valid[:, 1:] & ~valid[:, :-1]):
        raise ConnectionDataError("stride connection data has padding (-1) before a stride")
    if flat.shape[1] > 1 and np.any((flat[:, 1:] == 0) & valid[:, 1:]):
        raise ConnectionDataError("stride connection data repeats a position (stride 0)")
    pos = np.cumsum(np.where(valid, flat, 0).astype(np.int64), axis=1)
    if np.any(valid & (pos >= flat.shape[1])):
        raise ConnectionDataError(
            f"stride connection data points past the end of its {flat.shape[1]}-element string"
        )


def check_direct(d: np.ndarray) -> None:
    """Raise ConnectionDataError unless `d` is a 0/1 string array."""
    d = np.asarray(d)
    if d.size and (d.min() < 0 or d.max() > 1):
        raise ConnectionDataError("direct connection data must hold only 0 and 1")


def stride_to_positions(s: np.ndarray) -> np.ndarray:
    """Prefix sums of each stride string (the positions that the stride combination
    intersects).

    Each element is accumulated with every element stored at a lower address of its
    string; the result is the position of each kept element, padded with -1.
    """
    s = np.asarray(s)
    flat = _rows(s)
    # padding sits at the tail: only the first `width` columns hold strides
    width = int(np.count_nonzero(flat >= 0, axis=1).max(initial=0))
    head = flat[:, :width]
    valid = head >= 0
    out = np.full(flat.shape, PAD, dtype=np.int64)
    out[:, :width] = np.where(valid, np.cumsum(np.where(valid, head, 0), axis=1, dtype=np.int64), PAD)
    return out.reshape(s.shape)


def _positions_kept(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) of every kept element of ``[R, L]`` stride data, row-major."""
    width = int(np.count_nonzero(s >= 0, axis=1).max(initial=0))
    head = s[:, :width]
    valid = head >= 0
    pos = np.cumsum(np.where(valid, head, 0), axis=1, dtype=np.int64)
    rows, ranks = np.nonzero(valid)
    return rows, pos[rows, ranks]


def stride_to_direct(s: np.ndarray) -> np.ndarray:
    """Stride index -> direct index (same shape, uint8)."""
    s = np.asarray(s)
    flat = _rows(s)
    rows, cols = _positions_kept(flat)
    if cols.size and cols.max() >= flat.shape[1]:
        raise ConnectionDataError(
            f"stride connection data points past the end of its {flat.shape[1]}-element string"
        )
    out = np.zeros(flat.shape, dtype=DIRECT_DTYPE)
    out[rows, cols] = 1
    return out.reshape(s.shape)


def _to_form(a: np.ndarray, form: str, target: str) -> np.ndarray:
    if form == target:
        return np.asarray(a)
    if form == DIRECT and target == STRIDE:
        return direct_to_stride(a)
    if form == STRIDE and target == DIRECT:
        return stride_to_direct(a)
    raise ConnectionDataError(f"cannot convert connection data from {form!r} to {target!r}")


def convert(a: np.ndarray, form: str, target: str) -> np.ndarray:
    """Convert connection data between the direct and the stride form."""
    storage_dtype(form)
    storage_dtype(target)
    return _to_form(a, form, target)


def reorder(a: np.ndarray, form: str) -> np.ndarray:
    """Swap the weight order (per_output ``[..., out, in]`` <-> per_input ``[..., in, out]``).

    Direct strings are transposed; stride strings go through the direct form.
    """
    a = np.asarray(a)
    if a.ndim < 2:
        raise ConnectionDataError("weight connection data needs rank >= 2 to reorder")
    d = a if form == DIRECT else stride_to_direct(a)
    t = np.ascontiguousarray(np.swapaxes(d, -1, -2))
    return t if form == DIRECT else direct_to_stride(t)


# ----------------------------------------------------------------------------------
# Combining (docs/sparse-mapping.md, section 2 "Method")
# ----------------------------------------------------------------------------------


def combine_direct(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Both direct: the AND of the two strings; leading dims broadcast."""
    return np.bitwise_and(np.asarray(a, DIRECT_DTYPE), np.asarray(b, DIRECT_DTYPE))


def combine_stride(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Both stride: prefix-sum, keep common positions, sort, differences."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape[-1] != b.shape[-1]:
        raise ConnectionDataError(
            f"cannot combine strings of length {a.shape[-1]} and {b.shape[-1]}"
        )
    shape = np.broadcast_shapes(a.shape, b.shape)
    length = shape[-1]
    n_rows = int(np.prod(shape[:-1], dtype=np.int64))
    if length == 0 or n_rows == 0:
        return np.full(shape, PAD, dtype=STRIDE_DTYPE)

    def source_index(s: np.ndarray) -> np.ndarray:
        """For each target string, the index of the string of `s` it broadcasts from."""
        lead = s.shape[:-1]
        n_src = int(np.prod(lead, dtype=np.int64))
        return np.broadcast_to(np.arange(n_src).reshape(lead), shape[:-1]).reshape(-1)

    def keys(s: np.ndarray) -> np.ndarray:
        # the fourth/fifth connection data: prefix sums (positions) of each string,
        # keyed by target string so that all strings are handled at once
        rows, pos = _positions_kept(_rows(s))
        n_src = int(np.prod(s.shape[:-1], dtype=np.int64))
        if n_src == n_rows:  # only size-1 dimensions added: the same strings
            return rows.astype(np.int64) * length + pos
        src_of = source_index(s)
        if n_src == 1:  # one string for all: tile it
            return (np.arange(n_rows, dtype=np.int64)[:, None] * length + pos[None, :]).reshape(-1)
        targets = np.argsort(src_of, kind="stable")  # target strings grouped by source
        per_src = np.bincount(src_of, minlength=n_src)
        first = np.cumsum(per_src) - per_src
        rep = per_src[rows]  # element e of source string r goes to each of r's targets
        elem = np.repeat(np.arange(rows.size), rep)
        k = np.arange(elem.size) - np.repeat(np.cumsum(rep) - rep, rep)
        return targets[first[rows[elem]] + k].astype(np.int64) * length + pos[elem]

    # drive with the operand that has more strings of its own; test the other's
    # positions through a mark table in its own (unbroadcast) layout
    if a[..., 0].size < b[..., 0].size:
        a, b = b, a
    driver = keys(a)
    other_rows, other_pos = _positions_kept(_rows(b))
    n_other = int(np.prod(b.shape[:-1], dtype=np.int64))
    if n_other * length <= 1 << 28:
        # select the elements present in both strings (linear time), then sort
        marked = np.zeros(n_other * length, dtype=bool)
        marked[other_rows.astype(np.int64) * length + other_pos] = True
        t_rows = driver // max(length, 1)
        src = source_index(b)[t_rows]
        common = np.sort(driver[marked[src.astype(np.int64) * length + driver - t_rows * length]])
    else:
        common = np.intersect1d(driver, keys(b), assume_unique=True)
    rows = common // max(length, 1)
    positions = common - rows * length
    stride = _differences(rows, positions)
    return _pack(rows, stride, n_rows, length, STRIDE_DTYPE, PAD).reshape(shape)


def combine(
    a: np.ndarray, a_form: str, b: np.ndarray, b_form: str, mixed: str = DIRECT
) -> tuple[np.ndarray, str]:
    """Combine two connection data; returns ``(third connection data, its form)``.

    Both direct -> AND. Both stride -> `combine_stride`. Mixed: ``mixed="direct"``
    converts the stride one to direct and ANDs; ``mixed="stride"`` converts the direct
    one to stride and takes the stride path. Leading dimensions
    broadcast (numpy rules); the last dimensions (string lengths) must agree.
    """
    storage_dtype(a_form)
    storage_dtype(b_form)
    if np.shape(a)[-1] != np.shape(b)[-1]:
        raise ConnectionDataError(
            f"cannot combine strings of length {np.shape(a)[-1]} and {np.shape(b)[-1]}"
        )
    if a_form == DIRECT and b_form == DIRECT:
        return combine_direct(a, b), DIRECT
    if a_form == STRIDE and b_form == STRIDE:
        return combine_stride(a, b), STRIDE
    if mixed == DIRECT:
        a = stride_to_direct(a) if a_form == STRIDE else a
        b = stride_to_direct(b) if b_form == STRIDE else b
        return combine_direct(a, b), DIRECT
    if mixed == STRIDE:
        a = direct_to_stride(a) if a_form == DIRECT else a
        b = direct_to_stride(b) if b_form == DIRECT else b
        return combine_stride(a, b), STRIDE
    raise ConnectionDataError(f"mixed must be 'direct' or 'stride', not {mixed!r}")


def combine_neuron_weight(
    neuron: np.ndarray,
    neuron_form: str,
    weight: np.ndarray,
    weight_form: str,
    weight_order: str = PER_OUTPUT,
    mixed: str = DIRECT,
) -> tuple[np.ndarray, str]:
    """Combine neuron connection data ``[..., in]`` with weight connection data.

    The result is per output neuron, shape ``[..., out, in]`` (a per-input weight
    string is reordered first: the AND is between strings over the input neurons).
    """
    if weight_order == PER_INPUT:
        weight = reorder(weight, weight_form)
    neuron = np.expand_dims(np.asarray(neuron), -2)
    return combine(neuron, neuron_form, weight, weight_form, mixed)


# ----------------------------------------------------------------------------------
# Selecting surviving pairs: the mapping unit (docs/sparse-mapping.md, section 2)
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The surviving (input neuron, weight) pairs, grouped by connection string.

    A string is one output neuron of one sample: ``shape`` is ``(..., out)`` (leading
    sample dimensions, then output neurons); string ``r`` (row-major over ``shape``)
    owns entries ``offsets[r]:offsets[r+1]`` of `inputs` (input-neuron index),
    `neurons` (its value) and `weights` (the weight between it and the output neuron).
    """

    shape: tuple[int, ...]
    offsets: np.ndarray
    rows: np.ndarray
    inputs: np.ndarray
    neurons: np.ndarray
    weights: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """Surviving pairs per string, shape ``shape``."""
        return np.diff(self.offsets).reshape(self.shape)

    @property
    def pairs(self) -> int:
        return int(self.inputs.size)

    def dot(self, dtype: np.dtype | None = None) -> np.ndarray:
        """Sum over each string of neuron * weight: the fc output, shape ``shape``."""
        dtype = np.dtype(dtype or np.result_type(self.neurons, self.weights))
        prod = self.neurons.astype(np.float64) * self.weights.astype(np.float64)
        n = int(np.prod(self.shape, dtype=np.int64))
        return np.bincount(self.rows, weights=prod, minlength=n).astype(dtype).reshape(self.shape)


def _kept(conn: np.ndarray, form: str) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) of every kept element of ``[R, L]`` connection data, row-major."""
    if form == DIRECT:
        return np.nonzero(conn)
    return _positions_kept(conn)  # the stride form is read by accumulation


def select(
    conn: np.ndarray,
    form: str,
    neurons: np.ndarray,
    weights: np.ndarray,
    order: str = PER_OUTPUT,
) -> Selection:
    """The mapping unit: pick the input neurons and weights whose connection is 1.

    `conn` is (combined) weight connection data ``[..., out, in]`` per output neuron
    (``order="per_input"``: ``[in, out]``, reordered first), `neurons` are ``[..., in]``
    and `weights` ``[out, in]`` (or ``[out, ...]``, flattened). Leading dimensions of
    `conn` and `neurons` broadcast.
    """
    storage_dtype(form)
    conn = np.asarray(conn)
    if order == PER_INPUT:
        conn = reorder(conn, form)
    elif order != PER_OUTPUT:
        raise ConnectionDataError(f"select needs weight connection data, not {order!r} order")
    w = as_matrix(weights)
    x = np.asarray(neurons)
    out_n, in_n = w.shape
    if conn.ndim < 2 or conn.shape[-2:] != (out_n, in_n):
        raise ConnectionDataError(
            f"connection data of shape {conn.shape} does not match weights [{out_n}, {in_n}]"
        )
    if x.ndim < 1 or x.shape[-1] != in_n:
        raise ConnectionDataError(f"neurons of shape {x.shape} do not have {in_n} inputs")
    lead = np.broadcast_shapes(conn.shape[:-2], x.shape[:-1])
    shape = (*lead, out_n)
    c = _rows(np.broadcast_to(conn, (*lead, out_n, in_n)))
    rows, cols = _kept(c, form)
    if cols.size and cols.max() >= in_n:
        raise ConnectionDataError("stride connection data points past the end of its string")
    xs = np.broadcast_to(x, (*lead, in_n)).reshape(-1, in_n)
    sample = rows // out_n
    out_idx = rows - sample * out_n
    counts = np.bincount(rows, minlength=c.shape[0])
    offsets = np.zeros(c.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return Selection(
        shape=shape,
        offsets=offsets,
        rows=rows,
        inputs=cols,
        neurons=xs[sample, cols],
        weights=w[out_idx, cols],
    )


def select_packed(
    conn: np.ndarray,
    form: str,
    neurons: np.ndarray,
    weights: np.ndarray,
    order: str = PER_OUTPUT,
) -> tuple[np.ndarray, np.ndarray]:
    """`select` as two left-packed arrays ``[..., out, in]`` (zeros after the pairs).

    These are the processed input neurons and processed weights of the `sparse.select`
    op: row ``(..., j)`` starts with the surviving pairs of output neuron ``j``.
    """
    sel = select(conn, form, neurons, weights, order)
    in_n = as_matrix(weights).shape[1]
    n = int(np.prod(sel.shape, dtype=np.int64))
    pn = _pack(sel.rows, sel.neurons, n, in_n, np.asarray(neurons).dtype, 0)
    pw = _pack(sel.rows, sel.weights, n, in_n, np.asarray(weights).dtype, 0)
    return pn.reshape(*sel.shape, in_n), pw.reshape(*sel.shape, in_n)


def select_neurons(conn: np.ndarray, form: str, neurons: np.ndarray) -> np.ndarray:
    """Input neurons selected by their own connection data, left-packed."""
    x = np.asarray(neurons)
    flat = _rows(np.broadcast_to(conn, x.shape))
    rows, cols = _kept(flat, form)
    xs = x.reshape(-1, x.shape[-1])
    return _pack(rows, xs[rows, cols], flat.shape[0], flat.shape[1], x.dtype, 0).reshape(x.shape)


def fc(
    x: np.ndarray,
    w: np.ndarray,
    conn: np.ndarray,
    form: str,
    order: str = PER_OUTPUT,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """Fully connected layer ``y[..., j] = sum_i x[..., i] W[j, i] (+ b[j])`` on surviving pairs.

    Only the pairs selected by `conn` are multiplied (accumulated in float64, then
    rounded to the result type), so the result equals the dense layer on the pruned
    operands up to summation order.
    """
    x = np.asarray(x)
    wm = as_matrix(w)
    dtype = np.result_type(x, wm)
    conn = np.asarray(conn)
    if order == PER_INPUT:
        conn = reorder(conn, form)
    if conn.ndim == 2:
        # weight-only connection data: one selection shared by every sample
        rows, cols = _kept(conn, form)
        lead = x.shape[:-1]
        xs = x.reshape(-1, x.shape[-1]).astype(np.float64)
        out_n = wm.shape[0]
        y = np.zeros((xs.shape[0], out_n), dtype=np.float64)
        if rows.size:
            prod = xs[:, cols] * wm[rows, cols].astype(np.float64)
            nonempty = np.flatnonzero(np.bincount(rows, minlength=out_n))
            starts = np.searchsorted(rows, nonempty)
            y[:, nonempty] = np.add.reduceat(prod, starts, axis=1)
        y = y.reshape(*lead, out_n)
    else:
        y = select(conn, form, x, wm).dot(np.float64)
    if bias is not None:
        y = y + np.asarray(bias, dtype=np.float64)
    return y.astype(dtype)


# ----------------------------------------------------------------------------------
# Group pruning (docs/sparse-mapping.md, section 2 "Method")
# ----------------------------------------------------------------------------------


def group_bounds(n: int, groups: int) -> np.ndarray:
    """Start offsets of `groups` contiguous groups over `n` elements (plus `n` at the end).

    Sizes differ by at most one, the larger groups first (numpy's array_split rule).
    """
    if groups < 1 or groups > max(n, 1):
        raise ConnectionDataError(f"cannot split {n} elements into {groups} groups")
    base, extra = divmod(n, groups)
    sizes = np.full(groups, base, dtype=np.int64)
    sizes[:extra] += 1
    bounds = np.zeros(groups + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    return bounds


def group_prune(
    x: np.ndarray,
    groups: int,
    threshold: float,
    count_threshold: int,
    axis: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Group pruning; returns ``(pruned x, kept-group mask)``.

    For every index of the dimensions before `axis`, the elements of the dimensions
    from `axis` on (row-major) are split into `groups` contiguous groups; a group is
    deleted (set to 0) when its count of elements with ``|x| <= threshold`` is greater
    than `count_threshold`. The mask has shape ``x.shape[:axis] + (groups,)``.
    """
    x = np.asarray(x)
    if not 0 <= axis <= max(x.ndim - 1, 0):
        raise ConnectionDataError(f"axis {axis} out of range for rank {x.ndim}")
    lead = x.shape[:axis]
    flat = x.reshape(int(np.prod(lead, dtype=np.int64)), -1)
    n = flat.shape[1]
    bounds = group_bounds(n, groups)
    small = (np.abs(flat) <= threshold).astype(np.int64)
    counts = np.add.reduceat(small, bounds[:-1], axis=1) if n else np.zeros((flat.shape[0], groups), np.int64)
    keep = counts <= count_threshold
    element_keep = np.repeat(keep, np.diff(bounds), axis=1)
    pruned = np.where(element_keep, flat, np.zeros((), x.dtype)).astype(x.dtype)
    return pruned.reshape(x.shape), keep.reshape(*lead, groups)


def group_keep_mask(
    x: np.ndarray, groups: int, threshold: float, count_threshold: int, axis: int = 0
) -> np.ndarray:
    """Element mask (x's shape) of the groups that `group_prune` keeps."""
    x = np.asarray(x)
    _, keep = group_prune(x, groups, threshold, count_threshold, axis)
    lead = x.shape[:axis]
    n = int(np.prod(x.shape[axis:], dtype=np.int64))
    sizes = np.diff(group_bounds(n, groups))
    del lead
    return np.repeat(keep.reshape(-1, groups), sizes, axis=1).reshape(x.shape)


# ----------------------------------------------------------------------------------
# Convolution on surviving weights
# ----------------------------------------------------------------------------------


def im2col(
    x: np.ndarray,
    kernel: tuple[int, int],
    strides: tuple[int, int] = (1, 1),
    pads: tuple[int, int, int, int] = (0, 0, 0, 0),
    dilations: tuple[int, int] = (1, 1),
) -> tuple[np.ndarray, tuple[int, int]]:
    """NCHW input -> ``[N, C*kh*kw, Ho*Wo]`` patches (row-major over C, kh, kw), (Ho, Wo).

    `pads` is ONNX's ``[top, left, bottom, right]``.
    """
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    win = np.lib.stride_tricks.sliding_window_view(xp, (span_h, span_w), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw]  # [N, C, Ho, Wo, kh, kw]
    n, c, ho, wo = win.shape[:4]
    cols = np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(n, c * kh * kw, ho * wo)
    return cols, (ho, wo)


def conv(
    x: np.ndarray,
    w: np.ndarray,
    conn: np.ndarray,
    form: str,
    order: str = PER_OUTPUT,
    bias: np.ndarray | None = None,
    strides: list[int] | None = None,
    pads: list[int] | None = None,
    dilations: list[int] | None = None,
    group: int = 1,
) -> np.ndarray:
    """ONNX Conv (NCHW, 1-D or 2-D) multiplying only connected weights.

    `conn` is the weights' connection data ``[Cout, Cin/group*kh*kw]`` (per_output;
    per_input is its transpose): the input neurons of output channel ``o`` are its
    receptive field. Accumulates in float64; equals the dense conv on the pruned
    weights up to summation order.
    """
    x = np.asarray(x)
    w = np.asarray(w)
    dtype = np.result_type(x, w)
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None, :], w[:, :, None, :]
        strides = [1, *(strides or [1])]
        dilations = [1, *(dilations or [1])]
        p = pads or [0, 0]
        pads = [0, p[0], 0, p[1]]
    strides = list(strides or [1, 1])
    dilations = list(dilations or [1, 1])
    pads = list(pads or [0, 0, 0, 0])
    conn = np.asarray(conn)
    if order == PER_INPUT:
        conn = reorder(conn, form)
    cout, cin_g, kh, kw = w.shape
    mask = (conn if form == DIRECT else stride_to_direct(conn)).astype(bool)
    if mask.shape != (cout, cin_g * kh * kw):
        raise ConnectionDataError(
            f"conv connection data {mask.shape} does not match weights {w.shape}"
        )
    cols, (ho, wo) = im2col(x.astype(np.float64), (kh, kw), strides, pads, dilations)
    wm = w.reshape(cout, -1).astype(np.float64)
    y = np.zeros((x.shape[0], cout, ho * wo), dtype=np.float64)
    per_group = cout // group
    k = cin_g * kh * kw
    for o in range(cout):
        keep = np.flatnonzero(mask[o])
        if keep.size:
            g = o // per_group
            y[:, o, :] = np.matmul(wm[o, keep], cols[:, g * k + keep, :])
    if bias is not None:
        y += np.asarray(bias, dtype=np.float64)[None, :, None]
    y = y.reshape(x.shape[0], cout, ho, wo)
    if one_d:
        y = y[:, :, 0, :]
    return y.astype(dtype)
