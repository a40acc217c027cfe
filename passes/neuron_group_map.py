"""`neuron-group-map`: map the neurons of a model onto a many-core mesh.

The original neuron-mapping algorithm ("A neural network topology mapping method for
many-core architectures"; docs/neuron-mapping.md, section 2 "Method") compiles a network's *neuron topology* onto a 2-D mesh of identical cores: the
neurons are partitioned into core-sized neuron groups (coarsening by heavy-edge
pairing, greedy-growing bisection, uncoarsening with move-cost refinement, steps
S2-S6), the groups are placed on a rectangular core region by recursive bisection
and improved by force-directed swaps (S7-S9), and the result is a many-to-one
neuron -> core map (S10). This pass derives that topology from a graph-dialect model
and runs the same algorithm as `nnx-map` (nnx/topology/mapper.py); see
docs/neuron-mapping.md, section 3.2 "The `neuron-group-map` pass".

    nnx-opt model.mlir --pass-pipeline='builtin.module(neuron-group-map{mesh=16x16 capacity=4096 seed=1 map-file=model.map.npy})'

**The neuron model.** Every tensor element is either a neuron, an alias of a neuron,
or no neuron (constants and values computed from constants only). Neurons are
numbered in this order: the elements of the function arguments (the input layer),
then, op by op in block order, the output elements of each layer op, row-major.

* Layer ops create neurons: every output element of `graph.conv` (1-D/2-D, constant
  `W`), `graph.gemm` and `graph.matmul` is a new neuron. Its synapses come from its
  receptive field (conv: the kernel taps inside the unpadded input; gemm/matmul: the
  contracted row/column) with weight |w| (|alpha * w| for gemm); zero weights of
  gemm/matmul are not synapses. When both matmul operands carry neurons (e.g.
  attention) each contributes synapses of weight 1. A gemm `C` that carries neurons
  is added element-wise like below (weight |beta|).
* Data-movement ops alias: `reshape`, `flatten`, `squeeze`, `unsqueeze`,
  `transpose`, `concat`, `split`, `slice`, `gather` (constant indices), `expand`,
  `tile`, `pad` (padding elements are no neuron), `depth_to_space`,
  `space_to_depth`, `identity`, `dropout` move neuron ids exactly as they move values
  (the interpreter's kernels are applied to the id arrays).
* Element-wise ops alias (every other op whose result has the broadcast shape of its
  neuron-carrying operands: unary activations, `add`/`mul`/... with broadcasting,
  `sum`/`max`/..., `batch_normalization`, `clip`, `softmax`, ...): output element e
  is the neuron of e in the **first** operand (ONNX order) that carries neurons,
  broadcast to the output shape. Every other neuron-carrying operand sends a synapse
  of weight 1 from its (broadcast) element e to that neuron, because its value must
  travel there (e.g. a residual `add(conv, x)` connects x's neurons to conv's).
  Softmax/normalisation over an axis are treated as element-wise (their reductions
  are not modelled as synapses).
* Pools alias with the same rule: `max_pool`/`average_pool` output (n, c, oy, ox) is
  the first in-bounds neuron of its window (row-major), and every other neuron of the
  window sends it a synapse (weight 1, or 1/window size for average pooling);
  `global_*_pool` output (n, c) is the first neuron of the channel, every other
  neuron of the channel sends it a synapse.
* Any other op (reductions, arg_max, top_k, resize, ...) that consumes neurons is
  rejected with a diagnostic; ops on constants only are ignored.

Each layer op that created neurons gets two discardable attributes:
`nnx.cores = array<i64: ...>` (the sorted unique cores y*W+x its output neurons
occupy) and `nnx.neurons = array<i64: first, count>` (its range in the map). With
`map-file=PATH` the whole map (int32, one core per neuron, numbered as above; the
same format as `nnx-map -o`) is written to PATH with numpy.save (atomically, only
when the pass succeeds). All `func.func` ops of the module form one network.

Options (pipeline syntax `neuron-group-map{mesh=4x4 capacity=64 seed=1}`):

* `mesh` ("16x16"): the core mesh WxH;
* `capacity` (0 = auto, ceil(1.03 x neurons / cores)): neurons per core;
* `seed` (0), `trials` (4; the original uses 4-8): randomness and trials per
  coarsening round and bisection; the result is deterministic for a seed;
* `algorithm` ("nnx" | "seed"): nnx's default improvements, or the original algorithm
  exactly (docs/neuron-mapping.md, section 7 lists the differences);
* `map-file` (""): where to write the neuron -> core map ("" = do not write);
* `max-synapses` (200000000): refuse models whose topology is larger.

Impossible requests (bad mesh, more groups needed than cores, a model too large)
raise `PassError`, which nnx-opt prints as one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError

from nnx.dialects.traits import DataMovement, ShapeQuery
from nnx.graph_queries import const_value


class _Builder:
    """Accumulates neurons and synapses while walking the model."""

    def __init__(self, max_synapses: int):
        self.n = 0
        self.pre: list[np.ndarray] = []
        self.post: list[np.ndarray] = []
        self.w: list[np.ndarray] = []
        self.count = 0
        self.max = max_synapses
        self.ids: dict[SSAValue, np.ndarray] = {}
        self.layers: list[tuple[Operation, int, int]] = []

    def new(self, shape) -> np.ndarray:
        size = int(np.prod(shape, dtype=np.int64))
        ids = np.arange(self.n, self.n + size, dtype=np.int64).reshape(shape)
        self.n += size
        return ids

    def check(self, op: Operation, extra: int) -> None:
        if self.count + extra > self.max:
            raise PassError(f"neuron-group-map: the model has more than max-synapses="
                            f"{self.max} synapses (at {op.name})", op)

    def add(self, op: Operation, pre, post, w) -> None:
        pre = np.asarray(pre, dtype=np.int64).reshape(-1)
        post = np.asarray(post, dtype=np.int64).reshape(-1)
        w = np.abs(np.asarray(w, dtype=np.float32)).reshape(-1)
        keep = (pre >= 0) & (post >= 0) & (pre != post) & (w != 0)
        if not keep.all():
            pre, post, w = pre[keep], post[keep], w[keep]
        if pre.size == 0:
            return
        self.check(op, pre.size)
        self.count += pre.size
        self.pre.append(pre.astype(np.int32))
        self.post.append(post.astype(np.int32))
        self.w.append(w)

    def get(self, v: SSAValue | None) -> np.ndarray | None:
        return None if v is None else self.ids.get(v)


def _shape(v: SSAValue, op: Operation) -> tuple[int, ...]:
    t = v.type
    if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
        raise PassError(f"neuron-group-map: {op.name} needs static tensor shapes", op)
    return tuple(int(d) for d in t.get_shape())


def _pads_begin(op, in_sp, out_sp, k, s, d) -> list[int]:
    """Padding before each spatial dim (ONNX pads / auto_pad)."""
    nd = len(in_sp)
    auto = op.attr("auto_pad", "NOTSET") or "NOTSET"
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = []
        for i in range(nd):
            total = max(0, (out_sp[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in_sp[i])
            out.append(total // 2 if auto == "SAME_UPPER" else total - total // 2)
        return out
    if auto == "VALID":
        return [0] * nd
    pads = op.attr("pads")
    return [int(p) for p in pads[:nd]] if pads else [0] * nd


def _window(op, x_shape, out_shape, kernel):
    nd = len(x_shape) - 2
    s = list(op.attr("strides") or [1] * nd)
    d = list(op.attr("dilations") or [1] * nd)
    pb = _pads_begin(op, x_shape[2:], out_shape[2:], kernel, s, d)
    return s, d, pb


def _as2d(shape, *vals):
    """1-D spatial -> 2-D with H = 1."""
    if len(shape) == 3:
        return [[1] + list(v) if v is not None else None for v in vals]
    return [list(v) for v in vals]


def _conv(b: _Builder, op) -> None:
    from nnx.topology.cnn_graph import conv_synapses

    x_ids = b.get(op.X)
    if x_ids is None:
        return
    w = const_value(op.W)
    if w is None:
        raise PassError("neuron-group-map: graph.conv needs a constant weight (graph.constant)",
                        op)
    xs, ys = _shape(op.X, op), _shape(op.Y, op)
    if len(xs) not in (3, 4):
        raise PassError(f"neuron-group-map: only 1-D and 2-D convolutions are supported "
                        f"(input rank {len(xs)})", op)
    if b.get(op.B) is not None:
        raise PassError("neuron-group-map: graph.conv with a computed bias is not supported", op)
    s, d, pb = _window(op, xs, ys, list(w.shape[2:]))
    if len(xs) == 3:
        s, d, pb = [1] + s, [1] + d, [0] + pb
        w = w[:, :, None, :]
        x_ids = x_ids[:, :, None, :]
    groups = int(op.attr("group", 1) or 1)
    n, c, h, wd = x_ids.shape
    oh, ow = (ys[2], ys[3]) if len(ys) == 4 else (1, ys[2])
    b.check(op, n * ys[1] * oh * ow * w.shape[1] * w.shape[2] * w.shape[3])
    out = b.new(ys)
    out4 = out.reshape(n, ys[1], oh, ow)
    for bi in range(n):
        syn, _ = conv_synapses((c, h, wd), w, stride=tuple(s), pad=tuple(pb), dilation=tuple(d),
                               groups=groups, out_hw=(oh, ow))
        src = x_ids[bi].reshape(-1)[syn.pre]
        dst = out4[bi].reshape(-1)[syn.post]
        b.add(op, src, dst, syn.weight)
    b.ids[op.Y] = out
    b.layers.append((op, int(out.reshape(-1)[0]), out.size))


def _contract(b: _Builder, op, a_ids, a_val, b_ids, b_val, out_ids, scale=1.0) -> None:
    """Synapses of out = a @ b (numpy.matmul shapes): from a[..., m, k] weighted by
    |b[..., k, n]| (1 when b is computed) and from b[..., k, n] weighted by |a|."""
    a = a_ids if a_ids is not None else np.full(a_val.shape, -1, dtype=np.int64)
    bb = b_ids if b_ids is not None else np.full(b_val.shape, -1, dtype=np.int64)
    aw = np.abs(a_val) * scale if a_val is not None else np.ones(a.shape, np.float32)
    bw = np.abs(b_val) * scale if b_val is not None else np.ones(bb.shape, np.float32)
    if a.ndim == 1:
        a, aw = a[None, :], aw[None, :]
    if bb.ndim == 1:
        bb, bw = bb[:, None], bw[:, None]
    batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
    m, k = a.shape[-2:]
    nn = bb.shape[-1]
    o = out_ids.reshape(*batch, m, nn)
    a = np.broadcast_to(a, (*batch, m, k)).reshape(-1, m, k)
    aw = np.broadcast_to(aw, (*batch, m, k)).reshape(-1, m, k)
    bb = np.broadcast_to(bb, (*batch, k, nn)).reshape(-1, k, nn)
    bw = np.broadcast_to(bw, (*batch, k, nn)).reshape(-1, k, nn)
    o = o.reshape(-1, m, nn)
    b.check(op, o.size * k * ((a_ids is not None) + (b_ids is not None)))
    for i in range(o.shape[0]):
        shp = (m, k, nn)
        post = np.broadcast_to(o[i][:, None, :], shp)
        if a_ids is not None:
            b.add(op, np.broadcast_to(a[i][:, :, None], shp), post,
                  np.broadcast_to(bw[i][None, :, :], shp))
        if b_ids is not None:
            b.add(op, np.broadcast_to(bb[i][None, :, :], shp), post,
                  np.broadcast_to(aw[i][:, :, None], shp))


def _matmul_like(b: _Builder, op, A, B, Y, trans_a=0, trans_b=0, alpha=1.0) -> np.ndarray | None:
    a_ids, b_ids = b.get(A), b.get(B)
    if a_ids is None and b_ids is None:
        return None
    a_val = None if a_ids is not None else const_value(A)
    b_val = None if b_ids is not None else const_value(B)
    if (a_ids is None and a_val is None) or (b_ids is None and b_val is None):
        raise PassError(f"neuron-group-map: {op.name} operand computed from constants only; "
                        "fold constants first (graph-fold-constants)", op)
    if trans_a:
        a_ids = a_ids.T if a_ids is not None else None
        a_val = a_val.T if a_val is not None else None
    if trans_b:
        b_ids = b_ids.T if b_ids is not None else None
        b_val = b_val.T if b_val is not None else None
    out = b.new(_shape(Y, op))
    _contract(b, op, a_ids, a_val, b_ids, b_val, out, scale=abs(alpha))
    b.ids[Y] = out
    b.layers.append((op, int(out.reshape(-1)[0]) if out.size else b.n, out.size))
    return out


def _elementwise(b: _Builder, op, ins: list[np.ndarray], out_v: SSAValue,
                 weights: list[float] | None = None) -> None:
    shape = _shape(out_v, op)
    try:
        bc = [np.broadcast_to(x, shape) for x in ins]
    except ValueError:
        raise PassError(f"neuron-group-map: cannot derive the neurons of {op.name} "
                        "(its operands do not broadcast to its result)", op) from None
    rep = bc[0].copy()
    for x in bc[1:]:
        rep = np.where(rep < 0, x, rep)
    for i, x in enumerate(bc[1:], 1):
        b.add(op, x, rep, np.full(x.shape, weights[i] if weights else 1.0, np.float32))
    b.ids[out_v] = rep


def _pool(b: _Builder, op, x_ids: np.ndarray) -> None:
    xs, ys = x_ids.shape, _shape(op.results[0], op)
    from nnx.dialects.graph import AveragePoolOp, GlobalAveragePoolOp, GlobalMaxPoolOp

    if isinstance(op, (GlobalAveragePoolOp, GlobalMaxPoolOp)):
        n, c = xs[:2]
        flat = x_ids.reshape(n, c, -1)
        valid = flat >= 0
        first = np.where(valid.any(-1), np.take_along_axis(flat, valid.argmax(-1)[..., None],
                                                           -1)[..., 0], -1)
        post = np.broadcast_to(first[..., None], flat.shape)
        w = 1.0 / flat.shape[-1] if isinstance(op, GlobalAveragePoolOp) else 1.0
        b.add(op, flat, post, np.full(flat.shape, w, np.float32))
        b.ids[op.results[0]] = first.reshape(ys)
        return
    if len(xs) not in (3, 4):
        raise PassError(f"neuron-group-map: only 1-D and 2-D pooling is supported "
                        f"(input rank {len(xs)})", op)
    kernel = list(op.attr("kernel_shape"))
    s, d, pb = _window(op, xs, ys, kernel)
    if len(xs) == 3:
        s, d, pb, kernel = [1] + s, [1] + d, [0] + pb, [1] + kernel
        x4 = x_ids[:, :, None, :]
        y4 = (ys[0], ys[1], 1, ys[2])
    else:
        x4, y4 = x_ids, ys
    h, w = x4.shape[2:]
    oh, ow = y4[2:]
    rep = np.full(y4, -1, dtype=np.int64)
    taps = []
    for ky in range(kernel[0]):
        iy = np.arange(oh) * s[0] - pb[0] + ky * d[0]
        vy = (iy >= 0) & (iy < h)
        for kx in range(kernel[1]):
            ix = np.arange(ow) * s[1] - pb[1] + kx * d[1]
            vx = (ix >= 0) & (ix < w)
            cand = x4[:, :, np.clip(iy, 0, h - 1)][:, :, :, np.clip(ix, 0, w - 1)]
            cand = np.where(vy[:, None] & vx[None, :], cand, -1)
            taps.append(cand)
            rep = np.where(rep < 0, cand, rep)
    wt = 1.0 / (kernel[0] * kernel[1]) if isinstance(op, AveragePoolOp) else 1.0
    for cand in taps:
        b.add(op, cand, rep, np.full(cand.shape, wt, np.float32))
    b.ids[op.results[0]] = rep.reshape(ys)


def _move(b: _Builder, op, data_pos) -> None:
    from nnx.interp import kernels_tensor  # noqa: F401  (registers the kernels)
    from nnx.dialects.graph import DropoutOp, PadOp
    from nnx.interp.kernels import NUM_OUTPUTS_ATTR, KernelError, run_kernel

    ins = op.onnx_inputs()
    args = []
    for i, v in enumerate(ins):
        ids = b.get(v)
        if ids is not None and data_pos is not None and i not in data_pos:
            raise PassError(f"neuron-group-map: {op.name} operand #{i} (an index or shape) "
                            "is computed from neurons", op)
        if ids is not None:
            args.append(ids + 1)  # 0 = no neuron (padding, constants)
        elif v is None:
            args.append(None)
        elif isinstance(op, PadOp) and i == 2:
            args.append(None)  # the pad value: no neuron
        else:
            c = const_value(v)
            if c is None:
                raise PassError(f"neuron-group-map: {op.name} operand #{i} is neither a "
                                "constant nor neuron values", op)
            if data_pos is None or i in data_pos:
                c = np.zeros(c.shape, dtype=np.int64)
            args.append(c)
    attrs = op.onnx_attributes()
    attrs[NUM_OUTPUTS_ATTR] = len(op.results)
    if isinstance(op, PadOp):
        attrs.pop("value", None)
    try:
        outs = run_kernel(op.ONNX_TYPE, args, attrs)
    except (KernelError, ValueError, IndexError) as e:
        raise PassError(f"neuron-group-map: cannot move neuron ids through {op.name}: {e}",
                        op) from None
    for r, o in zip(op.results, outs):
        if isinstance(op, DropoutOp) and r is not op.results[0]:
            continue
        b.ids[r] = np.asarray(o, dtype=np.int64) - 1


def _walk(b: _Builder, block) -> None:
    from nnx.dialects.graph import (
        AveragePoolOp,
        ConstantOp,
        ConvOp,
        GemmOp,
        GlobalAveragePoolOp,
        GlobalMaxPoolOp,
        GraphOp,
        MatMulOp,
        MaxPoolOp,
        SubgraphOp,
        YieldOp,
    )

    for op in block.ops:
        if isinstance(op, (ConstantOp, ReturnOp, YieldOp)):
            continue
        if isinstance(op, SubgraphOp):
            for a, v in zip(op.body.block.args, op.inputs):
                ids = b.get(v)
                if ids is not None:
                    b.ids[a] = ids
            _walk(b, op.body.block)
            term = op.body.block.last_op
            for r, v in zip(op.results, term.operands):
                ids = b.get(v)
                if ids is not None:
                    b.ids[r] = ids
            continue
        data = op.onnx_inputs() if isinstance(op, GraphOp) else list(op.operands)
        if not any(b.get(v) is not None for v in data):
            continue  # computed from constants only: no neurons
        if not isinstance(op, GraphOp):
            raise PassError(f"neuron-group-map: cannot derive neurons through {op.name}", op)
        if isinstance(op, ConvOp):
            _conv(b, op)
        elif isinstance(op, GemmOp):
            out = _matmul_like(b, op, op.A, op.B, op.Y, op.attr("transA", 0) or 0,
                               op.attr("transB", 0) or 0, op.attr("alpha", 1.0))
            if out is not None and b.get(op.C) is not None:
                beta = op.attr("beta", 1.0)
                c = np.broadcast_to(b.get(op.C), out.shape)
                b.add(op, c, out, np.full(out.shape, abs(beta), np.float32))
        elif isinstance(op, MatMulOp):
            _matmul_like(b, op, op.A, op.B, op.Y)
        elif op.has_trait(DataMovement):
            _move(b, op, op.get_trait(DataMovement).data_operands)
        elif isinstance(op, (MaxPoolOp, AveragePoolOp, GlobalMaxPoolOp, GlobalAveragePoolOp)):
            _pool(b, op, b.get(op.X))
        elif op.has_trait(ShapeQuery):
            continue  # the result is metadata, not neuron values
        else:
            neuron_ins = [b.get(v) for v in op.onnx_inputs() if b.get(v) is not None]
            if len(op.results) < 1 or not isinstance(op.results[0].type, TensorType):
                raise PassError(f"neuron-group-map: cannot derive neurons through {op.name}",
                                op)
            out_shape = _shape(op.results[0], op)
            try:
                bshape = np.broadcast_shapes(*[x.shape for x in neuron_ins])
            except ValueError:
                bshape = None
            if bshape != out_shape:
                raise PassError(f"neuron-group-map: cannot derive neurons through {op.name} "
                                "(not element-wise: its result shape differs from its "
                                "neuron operands')", op)
            _elementwise(b, op, neuron_ins, op.results[0])


@dataclass(frozen=True)
class NeuronGroupMapPass(ModulePass):
    """Partition the model's neurons into core-sized groups, place them on the mesh,
    annotate layer ops with `nnx.cores` (see the module docstring and
    docs/neuron-mapping.md, section 3.2)."""

    name = "neuron-group-map"

    mesh: str = "16x16"
    capacity: int = 0
    seed: int = 0
    trials: int = 4
    algorithm: str = "nnx"
    map_file: str = ""
    max_synapses: int = 200_000_000

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.topology.graph import from_edges
        from nnx.topology.mapper import PlaceOptions, evaluate, map_graph, parse_mesh
        from nnx.topology.partition import MappingError, PartitionOptions, plan_groups

        try:
            mesh_w, mesh_h = parse_mesh(str(self.mesh))
        except MappingError as e:
            raise PassError(f"neuron-group-map: {e}", op) from None
        if self.algorithm not in ("nnx", "seed"):
            raise PassError(f"neuron-group-map: algorithm must be 'nnx' or 'seed' "
                            f"(got {self.algorithm!r})", op)
        if self.capacity < 0:
            raise PassError(f"neuron-group-map: capacity must be positive (got "
                            f"{self.capacity})", op)
        if not 1 <= self.trials <= 64:
            raise PassError(f"neuron-group-map: trials must be in 1..64 (got {self.trials})",
                            op)
        b = _Builder(int(self.max_synapses))
        funcs = [f for f in op.walk() if isinstance(f, FuncOp) and f.body.blocks]
        for f in funcs:  # the input layer first
            for a in f.body.block.args:
                if isinstance(a.type, TensorType):
                    b.ids[a] = b.new(_shape(a, f))
        for f in funcs:
            _walk(b, f.body.block)
        if not b.layers:
            return
        cores = mesh_w * mesh_h
        cap = int(self.capacity) or max(1, math.ceil(1.03 * b.n / cores))
        anchor = b.layers[0][0]
        if self.algorithm == "seed":
            popts = PartitionOptions.seed(trials=self.trials)
            plopts = PlaceOptions.seed(trials=self.trials)
        else:
            popts = PartitionOptions(trials=self.trials)
            plopts = PlaceOptions(trials=self.trials)
        try:
            plan_groups(b.n, 1, cap, cores, popts)
        except MappingError as e:
            raise PassError(f"neuron-group-map: {b.n} neurons on a {mesh_w}x{mesh_h} mesh: {e}",
                            anchor) from None
        if b.pre:
            pre, post, w = np.concatenate(b.pre), np.concatenate(b.post), np.concatenate(b.w)
        else:
            pre = post = np.empty(0, np.int32)
            w = np.empty(0, np.float32)
        b.pre = b.post = b.w = []
        g = from_edges(pre, post, w, n=b.n)
        del pre, post, w
        try:
            res = map_graph(g, mesh_w, mesh_h, cap, seed=int(self.seed), popts=popts,
                            plopts=plopts)
        except MappingError as e:
            raise PassError(f"neuron-group-map: {e}", anchor) from None
        core = res.core.astype(np.int32)
        if not evaluate(g, core, mesh_w, cap)["within_capacity"]:
            raise PassError("neuron-group-map: internal error: a core exceeds the capacity",
                            anchor)
        for lop, first, count in b.layers:
            used = np.unique(core[first:first + count]).astype(np.int64).tolist()
            lop.attributes["nnx.cores"] = DenseArrayBase.from_list(i64, used)
            lop.attributes["nnx.neurons"] = DenseArrayBase.from_list(i64, [first, count])
        if self.map_file:
            from nnx.topology.report import save_npy

            try:
                save_npy(str(self.map_file), core)
            except OSError as e:
                raise PassError(f"neuron-group-map: cannot write map-file "
                                f"{self.map_file}: {e.strerror or e}", op) from None
