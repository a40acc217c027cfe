"""`sparsify`: prune constant weights (and optionally neurons) into the sparse dialect.

The sparse mapping unit (docs/sparse-mapping.md, section 2 "Method") computes a neural
operation only on the input neurons and weights that survive: connection data mark
the weights with ``|w| > threshold``, optional group pruning deletes whole groups
first, neuron connection data are combined with weight connection data, and the
mapping unit hands the operation unit only the surviving pairs. This pass
(docs/sparse-mapping.md, section 4 "The `sparse` dialect and the `sparsify` pass")
rewrites

* ``graph.gemm`` (constant B, ``transA = 0``, ``alpha = beta = 1``, C absent or
  ``[N]``/``[1, N]``) into ``sparse.fc`` with weights ``[out, in]``;
* ``graph.matmul`` with a constant 2-D B into ``sparse.matmul`` (B kept ``[K, N]``);
* ``graph.conv`` (1-D/2-D, constant W, explicit pads or ``auto_pad`` NOTSET/VALID) into
  ``sparse.conv``;

each time: the constant weights are pruned (zeroed where ``|w| <= weight-threshold``
and in deleted groups) into a new ``graph.constant``; ``sparse.connect`` builds their
connection data; with ``neuron-threshold >= 0`` (fc/matmul) the activations get
neuron connection data combined with the weights'; the sparse compute op replaces the
graph op, carrying its ``after(...)`` group and discardable attributes, plus
``nnx.sparsity`` (the pruned fraction of the weights). Ops that do not match are left
as they are.

Options (pipeline syntax ``sparsify{weight-threshold=0.5 index-form=stride}``):

* ``weight-threshold`` (0.0): prune weights with ``|w| <= t``. Exact zeros are always
  dropped (a negative value means "no threshold pruning");
* ``weight-groups`` (0 = off), ``weight-group-threshold`` (0.0), ``weight-group-count``
  (0): split each weight tensor (in the `weight-order` layout, row-major) into N
  groups; delete a group whose count of ``|w| <= weight-group-threshold`` exceeds
  ``weight-group-count``;
* ``neuron-threshold`` (-1 = no neuron sparsity): neuron connection data of the
  activation, ``|x| > t`` (fc/matmul only). ``0.0`` is lossless (zeros contribute
  nothing, e.g. after a ReLU); a positive value drops small activations (lossy);
* ``neuron-groups`` (0 = off), ``neuron-group-threshold``, ``neuron-group-count``:
  group pruning of each activation row (``sparse.group_prune`` on the last axis);
* ``index-form`` (``direct`` | ``stride``): the form of the connection data;
* ``weight-order`` (``per-output`` | ``per-input``): the order of the weight
  connection data (per-input data are converted to per-output before combining with
  neuron data);
* ``min-sparsity`` (0.0): only rewrite ops whose pruned weight fraction is at least
  this.

Differential guarantee: with thresholds <= 0 and no group pruning the outputs equal the
dense model's up to summation order (the sparse ops accumulate in float64); in general
they equal the dense model with the weights pruned as above.

    nnx-opt model.mlir --pass-pipeline='builtin.module(sparsify{weight-threshold=0.05})'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from nnx import connection_data as cd
from nnx.diagnostics import PassError
from nnx.graph_queries import constant_op

_FORMS = {"direct": cd.DIRECT, "stride": cd.STRIDE}
_ORDERS = {"per-output": cd.PER_OUTPUT, "per-input": cd.PER_INPUT}


@dataclass(frozen=True)
class SparsifyConfig:
    weight_threshold: float
    weight_groups: int
    weight_group_threshold: float
    weight_group_count: int
    neuron_threshold: float
    neuron_groups: int
    neuron_group_threshold: float
    neuron_group_count: int
    form: str
    order: str
    min_sparsity: float


# --------------------------------------------------------------------------------------
# Shared rewriting
# --------------------------------------------------------------------------------------


def _weights(op: Operation, const) -> np.ndarray:
    from nnx.resources import ResourceError

    try:
        return np.asarray(const.numpy_value())
    except ResourceError as e:
        raise PassError(f"sparsify: cannot read the weights of {op.name}: {e}", const) from None


def prune_weights(w_out_in: np.ndarray, cfg: SparsifyConfig) -> tuple[np.ndarray, float]:
    """Prune ``[out, in]`` weights (threshold, then group pruning); (pruned, pruned fraction).

    Group pruning splits the weights in the configured order (per-output: rows of
    ``[out, in]``; per-input: rows of ``[in, out]``), row-major, into N groups.
    """
    threshold = max(cfg.weight_threshold, 0.0)
    keep = np.abs(w_out_in) > threshold
    if cfg.weight_groups > 0:
        laid = w_out_in if cfg.order == cd.PER_OUTPUT else w_out_in.T
        n = laid.size
        if cfg.weight_groups > n:
            raise ValueError(f"weight-groups={cfg.weight_groups} exceeds the {n} weights")
        gk = cd.group_keep_mask(
            laid, cfg.weight_groups, cfg.weight_group_threshold, cfg.weight_group_count
        )
        keep &= gk if cfg.order == cd.PER_OUTPUT else gk.T
    pruned = np.where(keep, w_out_in, np.zeros((), w_out_in.dtype)).astype(w_out_in.dtype)
    fraction = 1.0 - float(np.count_nonzero(keep)) / max(keep.size, 1)
    return pruned, fraction


class _SparsifyPattern(RewritePattern):
    def __init__(self, cfg: SparsifyConfig):
        super().__init__()
        self.cfg = cfg

    # -- helpers -------------------------------------------------------------------

    def _new_constant(self, rewriter: PatternRewriter, old, value: np.ndarray, hint: str):
        from nnx.dialects.graph import ConstantOp, dense_attr
        from nnx.resources import register_array

        value = np.ascontiguousarray(value)
        attr = dense_attr(value) if value.size <= 16 else register_array(value, hint=hint)
        c = ConstantOp(attr)
        c.location = old.location
        c.output.name_hint = (old.output.name_hint or "w") + "_sparse"
        rewriter.insert(c, InsertPoint.after(old))
        return c

    def _weight_conn(
        self,
        rewriter: PatternRewriter,
        weights: SSAValue,
        after: list[SSAValue],
        layout: str,
    ) -> SSAValue:
        from nnx.dialects.sparse import OUT_IN, ConnectOp

        threshold = max(self.cfg.weight_threshold, 0.0)
        c = ConnectOp(weights, threshold, self.cfg.form, self.cfg.order, layout or OUT_IN, after)
        c.result.name_hint = (weights.name_hint or "w") + "_conn"
        rewriter.insert(c)
        return c.result

    def _neurons(
        self, rewriter: PatternRewriter, x: SSAValue, after: list[SSAValue]
    ) -> SSAValue:
        """Neuron group pruning of each activation row, when configured."""
        from nnx.dialects.sparse import GroupPruneOp

        cfg = self.cfg
        if cfg.neuron_groups <= 0:
            return x
        shape = tuple(x.type.get_shape())  # type: ignore[union-attr]
        if cfg.neuron_groups > shape[-1]:
            raise ValueError(
                f"neuron-groups={cfg.neuron_groups} exceeds the {shape[-1]} input neurons"
            )
        g = GroupPruneOp(
            x,
            cfg.neuron_groups,
            cfg.neuron_group_threshold,
            cfg.neuron_group_count,
            axis=len(shape) - 1,
            after=after,
        )
        rewriter.insert(g)
        return g.output

    def _combined(
        self, rewriter: PatternRewriter, x: SSAValue, wconn: SSAValue, after: list[SSAValue]
    ) -> SSAValue:
        """Weight connection data, combined with the neurons' when neuron-threshold >= 0."""
        from nnx.dialects.sparse import CombineOp, ConnectOp, ConvertOp

        cfg = self.cfg
        if cfg.neuron_threshold < 0:
            return wconn
        if cfg.order == cd.PER_INPUT:
            conv = ConvertOp(wconn, order=cd.PER_OUTPUT, after=after)
            rewriter.insert(conv)
            wconn = conv.result
        nc = ConnectOp(x, cfg.neuron_threshold, cfg.form, cd.NEURON, after=after)
        rewriter.insert(nc)
        comb = CombineOp(nc.result, wconn, after=after)
        rewriter.insert(comb)
        return comb.result

    def _finish(
        self, rewriter: PatternRewriter, op: Operation, new: Operation, fraction: float, old_consts
    ) -> None:
        for k, v in op.attributes.items():
            new.attributes[k] = v
        new.attributes["nnx.sparsity"] = FloatAttr(round(fraction, 6), f32)
        new.location = op.location
        if new.results[0].type != op.results[0].type:
            raise PassError(
                f"sparsify: {new.name} would have type {new.results[0].type}, "
                f"{op.name} has {op.results[0].type}",
                op,
            )
        rewriter.replace(op, new)
        for c in old_consts:
            if c is not None and c.parent is not None and not c.output.uses:
                rewriter.erase(c)

    def _wrap(self, op: Operation, fn) -> None:
        try:
            fn()
        except ValueError as e:
            raise PassError(f"sparsify: {op.name}: {e}", op) from None


class SparsifyGemm(_SparsifyPattern):
    """graph.gemm (constant B) -> sparse.fc."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import GemmOp

        if not isinstance(op, GemmOp):
            return
        a = op.onnx_attributes()
        if int(a.get("transA", 0)) != 0 or float(a.get("alpha", 1.0)) != 1.0:
            return
        const = constant_op(op.B)
        if const is None or len(op.B.type.get_shape()) != 2:  # type: ignore[union-attr]
            return
        c = op.C
        if c is not None:
            if float(a.get("beta", 1.0)) != 1.0:
                return
            n = op.Y.type.get_shape()[-1]  # type: ignore[union-attr]
            if tuple(c.type.get_shape()) not in ((n,), (1, n)):  # type: ignore[union-attr]
                return
        b = _weights(op, const)
        w = b if int(a.get("transB", 0)) else b.T  # [out, in], one row per output neuron
        self._wrap(op, lambda: self._rewrite(op, rewriter, const, w, c))

    def _rewrite(self, op, rewriter, const, w, bias) -> None:
        from nnx.dialects.sparse import FcOp

        pruned, fraction = prune_weights(w, self.cfg)
        if fraction < self.cfg.min_sparsity:
            return
        after = list(op.after)
        wc = self._new_constant(rewriter, const, pruned, "sparse_w")
        wconn = self._weight_conn(rewriter, wc.output, after, "")
        x = self._neurons(rewriter, op.A, after)
        conn = self._combined(rewriter, x, wconn, after)
        new = FcOp(x, wc.output, bias, conn, after)
        self._finish(rewriter, op, new, fraction, [const])


class SparsifyMatMul(_SparsifyPattern):
    """graph.matmul (constant 2-D B) -> sparse.matmul."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import MatMulOp

        if not isinstance(op, MatMulOp):
            return
        const = constant_op(op.B)
        if const is None or len(op.B.type.get_shape()) != 2:  # type: ignore[union-attr]
            return
        b = _weights(op, const)
        self._wrap(op, lambda: self._rewrite(op, rewriter, const, b))

    def _rewrite(self, op, rewriter, const, b) -> None:
        from nnx.dialects.sparse import IN_OUT, MatMulOp

        pruned_t, fraction = prune_weights(b.T, self.cfg)
        if fraction < self.cfg.min_sparsity:
            return
        after = list(op.after)
        wc = self._new_constant(rewriter, const, pruned_t.T, "sparse_w")
        wconn = self._weight_conn(rewriter, wc.output, after, IN_OUT)
        x = self._neurons(rewriter, op.A, after)
        conn = self._combined(rewriter, x, wconn, after)
        new = MatMulOp(x, wc.output, conn, after)
        self._finish(rewriter, op, new, fraction, [const])


class SparsifyConv(_SparsifyPattern):
    """graph.conv (constant W, 1-D/2-D, explicit pads) -> sparse.conv."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        from nnx.dialects.graph import ConvOp

        if not isinstance(op, ConvOp):
            return
        const = constant_op(op.W)
        if const is None:
            return
        wshape = tuple(op.W.type.get_shape())  # type: ignore[union-attr]
        if len(wshape) not in (3, 4):
            return
        a = op.onnx_attributes()
        auto_pad = a.get("auto_pad", "NOTSET")
        if auto_pad not in ("NOTSET", "VALID"):
            return
        if "kernel_shape" in a and tuple(a["kernel_shape"]) != wshape[2:]:
            return
        w = _weights(op, const)
        self._wrap(op, lambda: self._rewrite(op, rewriter, const, w, a, auto_pad))

    def _rewrite(self, op, rewriter, const, w, a, auto_pad) -> None:
        from nnx.dialects.graph import python_to_attr
        from nnx.dialects.sparse import ConvOp as SparseConv

        pruned, fraction = prune_weights(cd.as_matrix(w), self.cfg)
        if fraction < self.cfg.min_sparsity:
            return
        after = list(op.after)
        wc = self._new_constant(rewriter, const, pruned.reshape(w.shape), "sparse_w")
        conn = self._weight_conn(rewriter, wc.output, after, "")
        props: dict[str, Attribute] = {}
        for k in ("dilations", "group", "pads", "strides"):
            if k in a and not (k == "pads" and auto_pad == "VALID"):
                props[k] = python_to_attr(a[k])
        new = SparseConv(op.X, wc.output, op.B, conn, op.Y.type, props, after)
        self._finish(rewriter, op, new, fraction, [const])


# --------------------------------------------------------------------------------------
# The pass
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparsifyPass(ModulePass):
    """Threshold/group-prune constant weights (and neurons) into connection data and
    rewrite gemm/matmul/conv into sparse ops (see the module docstring and
    docs/sparse-mapping.md, section 4)."""

    name = "sparsify"

    weight_threshold: int | float = 0.0
    neuron_threshold: int | float = -1.0
    weight_groups: int = 0
    weight_group_threshold: int | float = 0.0
    weight_group_count: int = 0
    neuron_groups: int = 0
    neuron_group_threshold: int | float = 0.0
    neuron_group_count: int = 0
    index_form: str = "direct"
    weight_order: str = "per-output"
    min_sparsity: int | float = 0.0

    def config(self) -> SparsifyConfig:
        if self.index_form not in _FORMS:
            raise PassError(f"sparsify: index-form must be direct or stride, not '{self.index_form}'")
        order = self.weight_order.replace("_", "-")
        if order not in _ORDERS:
            raise PassError(
                f"sparsify: weight-order must be per-output or per-input, not '{self.weight_order}'"
            )
        for name in (
            "weight_threshold",
            "neuron_threshold",
            "weight_group_threshold",
            "neuron_group_threshold",
            "min_sparsity",
        ):
            v = float(getattr(self, name))
            if not math.isfinite(v):
                raise PassError(f"sparsify: {name.replace('_', '-')} must be finite")
        for name in ("weight_groups", "weight_group_count", "neuron_groups", "neuron_group_count"):
            if int(getattr(self, name)) < 0:
                raise PassError(f"sparsify: {name.replace('_', '-')} must be >= 0")
        if not 0.0 <= float(self.min_sparsity) <= 1.0:
            raise PassError(f"sparsify: min-sparsity must be in [0, 1], got {self.min_sparsity}")
        return SparsifyConfig(
            weight_threshold=float(self.weight_threshold),
            weight_groups=int(self.weight_groups),
            weight_group_threshold=float(self.weight_group_threshold),
            weight_group_count=int(self.weight_group_count),
            neuron_threshold=float(self.neuron_threshold),
            neuron_groups=int(self.neuron_groups),
            neuron_group_threshold=float(self.neuron_group_threshold),
            neuron_group_count=int(self.neuron_group_count),
            form=_FORMS[self.index_form],
            order=_ORDERS[order],
            min_sparsity=float(self.min_sparsity),
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.dialects.sparse import Sparse

        cfg = self.config()
        if ctx.get_optional_dialect("sparse") is None:
            ctx.load_dialect(Sparse)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [SparsifyGemm(cfg), SparsifyMatMul(cfg), SparsifyConv(cfg)]
            ),
            apply_recursively=False,
        ).rewrite_module(op)
