"""Property tests of the mapping-unit semantics (nnx/connection_data.py;
docs/sparse-mapping.md, section 3).

For random neurons, weights and thresholds, every path (direct, stride, mixed both
ways, both weight orders) must select exactly the (input neuron, weight) pairs that a
plain numpy mask selects; conversions round-trip; group pruning agrees with a loop
reimplementation written from the description in docs/sparse-mapping.md, section 2.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnx import connection_data as cd

FORMS = [cd.DIRECT, cd.STRIDE]
ORDERS = [cd.PER_OUTPUT, cd.PER_INPUT]

SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def arrays(draw, shape):
    # values on a coarse grid so that ties with the threshold (|x| == t) happen
    vals = draw(
        st.lists(
            st.integers(-8, 8), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
        )
    )
    return (np.array(vals, dtype=np.float32) / 4).reshape(shape)


@st.composite
def fc_case(draw):
    batch = draw(st.integers(1, 3))
    n_in = draw(st.integers(1, 9))
    n_out = draw(st.integers(1, 6))
    x = draw(arrays((batch, n_in)))
    w = draw(arrays((n_out, n_in)))
    tn = draw(st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 2.5]))
    tw = draw(st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 2.5]))
    return x, w, tn, tw


# --------------------------------------------------------------------------------------
# Reference implementations, written as loops straight from the method
# (docs/sparse-mapping.md, section 2)
# --------------------------------------------------------------------------------------


def ref_stride(bits: list[int]) -> list[int]:
    """Stride index: distance of each kept element from the previous kept one (first: from 0)."""
    out, prev = [], 0
    for i, b in enumerate(bits):
        if b:
            out.append(i - prev)
            prev = i
    return out


def ref_group_prune(x: np.ndarray, groups: int, t: float, count_t: int) -> np.ndarray:
    """Group pruning with loops: delete a group unless its count of |x| <= t is <= count_t."""
    flat = [float(v) for v in x.reshape(-1)]
    n = len(flat)
    out = list(flat)
    start = 0
    for g in range(groups):
        size = n // groups + (1 if g < n % groups else 0)
        small = 0
        for k in range(start, start + size):
            if abs(flat[k]) <= t:
                small += 1
        satisfies = small <= count_t
        if not satisfies:
            for k in range(start, start + size):
                out[k] = 0.0
        start += size
    return np.array(out, dtype=x.dtype).reshape(x.shape)


def unpad(row: np.ndarray) -> list[int]:
    return [int(v) for v in row if v >= 0]


# --------------------------------------------------------------------------------------
# Forms and conversions
# --------------------------------------------------------------------------------------


@SETTINGS
@given(st.integers(1, 4), st.integers(0, 12), st.data())
def test_stride_matches_loop_definition(rows, length, data):
    x = data.draw(arrays((rows, max(length, 1))))
    t = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    d = cd.direct_index(x, t)
    assert d.dtype == np.uint8
    assert np.array_equal(d, (np.abs(x) > t).astype(np.uint8))
    s = cd.stride_index(x, t)
    assert s.shape == x.shape and s.dtype == np.int32
    for r in range(x.shape[0]):
        assert unpad(s[r]) == ref_stride([int(abs(v) > t) for v in x[r]])
        # padding only at the tail
        k = len(unpad(s[r]))
        assert np.all(s[r, k:] == cd.PAD)
    cd.check_stride(s)


@SETTINGS
@given(st.data())
def test_direct_stride_round_trip(data):
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    bits = data.draw(arrays(shape)) != 0
    d = bits.astype(np.uint8)
    s = cd.direct_to_stride(d)
    assert np.array_equal(cd.stride_to_direct(s), d)
    assert np.array_equal(cd.direct_to_stride(cd.stride_to_direct(s)), s)
    assert np.array_equal(cd.stride_counts(s), d.sum(-1))
    assert np.array_equal(cd.convert(d, cd.DIRECT, cd.STRIDE), s)


@SETTINGS
@given(fc_case(), st.sampled_from(FORMS))
def test_weight_orders(case, form):
    _, w, _, tw = case
    mask = (np.abs(w) > tw).astype(np.uint8)
    po = cd.weight_connection(w, tw, form, cd.PER_OUTPUT)
    pi = cd.weight_connection(w, tw, form, cd.PER_INPUT)
    assert po.shape == w.shape and pi.shape == w.T.shape
    as_direct = (lambda a: a) if form == cd.DIRECT else cd.stride_to_direct
    assert np.array_equal(as_direct(po), mask)
    assert np.array_equal(as_direct(pi), mask.T)
    assert np.array_equal(cd.reorder(po, form), pi)
    assert np.array_equal(cd.reorder(pi, form), po)


def test_bad_stride_is_rejected():
    with pytest.raises(cd.ConnectionDataError):
        cd.check_stride(np.array([1, -1, 2], np.int32))  # padding before a stride
    with pytest.raises(cd.ConnectionDataError):
        cd.check_stride(np.array([1, 0, -1], np.int32))  # repeated position
    with pytest.raises(cd.ConnectionDataError):
        cd.stride_to_direct(np.array([2, 3, -1], np.int32))  # position 5 of 3
    with pytest.raises(cd.ConnectionDataError):
        cd.combine(np.ones(3, np.uint8), "direct", np.ones(4, np.uint8), "direct")


def test_stride_example():
    # kept at positions 1, 3, 4, 7 -> strides 1, 2, 1, 3
    x = np.array([0, 2, 0, 3, 4, 0, 0, 5], np.float32)
    assert unpad(cd.stride_index(x, 0.5)) == [1, 2, 1, 3]
    assert unpad(cd.stride_to_positions(cd.stride_index(x, 0.5))) == [1, 3, 4, 7]
    # first element kept: its stride is 0 (distance from position 0)
    assert unpad(cd.stride_index(np.array([1, 0, 1.0]), 0.5)) == [0, 2]


# --------------------------------------------------------------------------------------
# Combining and selecting: every path equals the numpy mask
# --------------------------------------------------------------------------------------


@SETTINGS
@given(
    fc_case(),
    st.sampled_from(FORMS),
    st.sampled_from(FORMS),
    st.sampled_from(ORDERS),
    st.sampled_from(FORMS),
)
def test_every_path_selects_the_numpy_mask(case, nform, wform, order, mixed):
    x, w, tn, tw = case
    # the plain numpy mask: pair (sample b, output j, input i) survives iff both survive
    mask = (np.abs(x)[:, None, :] > tn) & (np.abs(w)[None, :, :] > tw)
    nc = cd.neuron_connection(x, tn, nform)
    wc = cd.weight_connection(w, tw, wform, order)
    conn, form = cd.combine_neuron_weight(nc, nform, wc, wform, order, mixed)
    expected_form = nform if nform == wform else mixed
    assert form == expected_form
    assert conn.shape == mask.shape
    direct = conn if form == cd.DIRECT else cd.stride_to_direct(conn)
    assert np.array_equal(direct.astype(bool), mask)
    if form == cd.STRIDE:
        cd.check_stride(conn)
        assert np.array_equal(conn, cd.direct_to_stride(mask.astype(np.uint8)))

    sel = cd.select(conn, form, x, w)
    b, j, i = np.nonzero(mask)
    n_out = w.shape[0]
    assert np.array_equal(sel.rows, b * n_out + j)
    assert np.array_equal(sel.inputs, i)
    assert np.array_equal(sel.neurons, x[b, i])
    assert np.array_equal(sel.weights, w[j, i])
    assert np.array_equal(sel.counts, mask.sum(-1))

    pn, pw = cd.select_packed(conn, form, x, w)
    for bb in range(x.shape[0]):
        for jj in range(n_out):
            keep = np.flatnonzero(mask[bb, jj])
            k = keep.size
            assert np.array_equal(pn[bb, jj, :k], x[bb, keep])
            assert np.array_equal(pw[bb, jj, :k], w[jj, keep])
            assert not pn[bb, jj, k:].any() and not pw[bb, jj, k:].any()

    y = cd.fc(x, w, conn, form)
    dense = np.einsum("bji,bi,ji->bj", mask.astype(np.float64), x, w)
    np.testing.assert_allclose(y, dense, rtol=1e-6, atol=1e-6)


@SETTINGS
@given(fc_case(), st.sampled_from(FORMS), st.sampled_from(ORDERS))
def test_weight_only_fc_equals_pruned_dense(case, form, order):
    x, w, _, tw = case
    wc = cd.weight_connection(w, tw, form, order)
    pruned = np.where(np.abs(w) > tw, w, 0)
    y = cd.fc(x, w, wc, form, order, bias=np.arange(w.shape[0], dtype=np.float32))
    np.testing.assert_allclose(
        y, x.astype(np.float64) @ pruned.T + np.arange(w.shape[0]), rtol=1e-6, atol=1e-6
    )
    assert y.dtype == np.float32


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 10), st.data())
def test_combine_two_of_a_kind(rows, length, data):
    a = data.draw(arrays((rows, length))) != 0
    b = data.draw(arrays((rows, length))) != 0
    expect = (a & b).astype(np.uint8)
    for fa in FORMS:
        for fb in FORMS:
            for mixed in FORMS:
                ca = cd.convert(a.astype(np.uint8), cd.DIRECT, fa)
                cb = cd.convert(b.astype(np.uint8), cd.DIRECT, fb)
                c, form = cd.combine(ca, fa, cb, fb, mixed)
                assert np.array_equal(cd.convert(c, form, cd.DIRECT), expect)


def test_select_neurons_by_their_own_connection_data():
    x = np.array([[0.0, 2, 0, 3]], np.float32)
    for form in FORMS:
        c = cd.neuron_connection(x, 0.5, form)
        assert cd.select_neurons(c, form, x).tolist() == [[2, 3, 0, 0]]


# --------------------------------------------------------------------------------------
# Group pruning
# --------------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_group_prune_matches_loops(data):
    shape = data.draw(st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple))
    x = data.draw(arrays(shape))
    n = x.size
    groups = data.draw(st.integers(1, n))
    t = data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    count_t = data.draw(st.integers(0, max(n // groups + 1, 0)))
    pruned, keep = cd.group_prune(x, groups, t, count_t)
    assert np.array_equal(pruned, ref_group_prune(x, groups, t, count_t))
    assert keep.shape == (groups,)
    mask = cd.group_keep_mask(x, groups, t, count_t)
    assert np.array_equal(np.where(mask, x, 0), pruned)
    assert mask.sum() == sum(
        len(g) for g, k in zip(np.array_split(np.arange(n), groups), keep) if k
    )


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 8), st.data())
def test_group_prune_per_row(rows, length, data):
    x = data.draw(arrays((rows, length)))
    groups = data.draw(st.integers(1, length))
    pruned, keep = cd.group_prune(x, groups, 0.25, 1, axis=1)
    assert keep.shape == (rows, groups)
    for r in range(rows):
        assert np.array_equal(pruned[r], ref_group_prune(x[r], groups, 0.25, 1))


def test_group_prune_bad_groups():
    with pytest.raises(cd.ConnectionDataError):
        cd.group_prune(np.ones(3), 4, 0.0, 0)
    with pytest.raises(cd.ConnectionDataError):
        cd.group_prune(np.ones(3), 0, 0.0, 0)
