"""Random DAGs of graph ops round-trip through print/parse unchanged.

Hypothesis draws a function of graph ops: random shapes and attributes that are
valid by construction (result types come from the ops' own `infer_result_types`),
random `after` edges to earlier ops, constants both inline `dense` and
`dense_resource` blobs. The module must verify and print identically after parsing,
in the custom and in the generic form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region, SSAValue

from nnx import ir_io
from nnx.dialects import graph as g
from nnx.resources import register_array
from nnx.types import tensor_type

UNARY = [
    g.AbsOp, g.CeilOp, g.CosOp, g.EluOp, g.ErfOp, g.ExpOp, g.FloorOp, g.GeluOp,
    g.HardSigmoidOp, g.HardSwishOp, g.IdentityOp, g.LeakyReluOp, g.MishOp, g.NegOp,
    g.ReciprocalOp, g.ReluOp, g.RoundOp, g.SeluOp, g.SigmoidOp, g.SignOp, g.SinOp,
    g.SoftplusOp, g.SoftsignOp, g.SqrtOp, g.TanhOp,
]
UNARY_ATTRS: dict[type, dict[str, Any]] = {
    g.EluOp: {"alpha": 0.5},
    g.GeluOp: {"approximate": "tanh"},
    g.HardSigmoidOp: {"alpha": 0.25, "beta": 0.5},
    g.LeakyReluOp: {"alpha": 0.01},
    g.SeluOp: {"alpha": 1.5, "gamma": 1.25},
}
BINARY = [g.AddOp, g.SubOp, g.MulOp, g.DivOp, g.PowOp, g.ModOp]
COMPARE = [g.EqualOp, g.LessOp, g.LessOrEqualOp, g.GreaterOp, g.GreaterOrEqualOp]
REDUCE = [g.ReduceMeanOp, g.ReduceSumOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReduceL2Op]

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


class DagBuilder:
    """Appends ops to one block, keeping a pool of (value, shape) to draw from."""

    def __init__(self, draw: Any, arg_shapes: list[tuple[int, ...]]):
        self.draw = draw
        self.block = Block(arg_types=[tensor_type(np.float32, s) for s in arg_shapes])
        self.floats: list[SSAValue] = list(self.block.args)
        self.bools: list[SSAValue] = []
        self.ops: list[g.GraphOp] = []

    # ---- helpers --------------------------------------------------------------------

    def pick(self, pool: list[SSAValue]) -> SSAValue:
        return pool[self.draw(st.integers(0, len(pool) - 1))]

    def constant(self, array: np.ndarray) -> SSAValue:
        if self.draw(st.booleans()):
            value = g.dense_attr(array)
        else:
            value = register_array(array, "w")
        op = g.ConstantOp(value)
        self.block.add_op(op)
        return op.output

    def random_array(self, shape: tuple[int, ...]) -> np.ndarray:
        seed = self.draw(st.integers(0, 2**16))
        return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

    def add(self, cls: type[g.GraphOp], inputs: list[Any], attrs: dict[str, Any], n_results: int = 1,
            present: list[bool] | None = None) -> g.GraphOp:
        after: list[SSAValue] = []
        if self.ops and self.draw(st.integers(0, 3)) == 0:
            k = self.draw(st.integers(1, min(2, len(self.ops))))
            idx = self.draw(st.lists(st.integers(0, len(self.ops) - 1), min_size=k, max_size=k, unique=True))
            after = [self.ops[i].results[0] for i in idx]
        flags = present or [True] * n_results
        x = next(v for v in inputs if v is not None)
        placeholder = [x.type if f else None for f in flags]
        probe = cls.build_onnx(inputs, attrs, placeholder)
        self.block.add_op(probe)  # constant operands are visible to inference
        types = probe.infer_result_types()
        probe.detach()
        probe.erase()
        assert types is not None and all(t is not None for t in types), cls.name
        it = iter(types)
        op = cls.build_onnx(inputs, attrs, [next(it) if f else None for f in flags], after)
        self.block.add_op(op)
        self.ops.append(op)
        for r in op.results:
            assert isinstance(r.type, TensorType)
            if not r.type.get_shape():
                continue  # rank 0 (full reductions): the generators need rank >= 1
            if r.type.element_type == g.I1:
                self.bools.append(r)
            elif r.type.element_type == tensor_type(np.float32, ()).element_type:
                self.floats.append(r)
        return op

    # ---- op generators ---------------------------------------------------------------

    def unary(self) -> None:
        cls = self.draw(st.sampled_from(UNARY))
        self.add(cls, [self.pick(self.floats)], UNARY_ATTRS.get(cls, {}))

    def binary(self) -> None:
        cls = self.draw(st.sampled_from(BINARY + COMPARE))
        a = self.pick(self.floats)
        shape = g.shape_of(a.type)
        k = self.draw(st.integers(0, len(shape)))
        bshape = tuple(d if self.draw(st.booleans()) else 1 for d in shape[k:])
        same = [v for v in self.floats if g.shape_of(v.type) == bshape]
        b = same[0] if same and self.draw(st.booleans()) else self.constant(self.random_array(bshape))
        ins = [b, a] if self.draw(st.booleans()) else [a, b]
        self.add(cls, ins, {"fmod": 1} if cls is g.ModOp else {})

    def logic(self) -> None:
        if not self.bools:
            return self.binary()
        a = self.pick(self.bools)
        choice = self.draw(st.integers(0, 2))
        if choice == 0:
            self.add(g.NotOp, [a], {})
        elif choice == 1:
            self.add(self.draw(st.sampled_from([g.AndOp, g.OrOp, g.XorOp])), [a, a], {})
        else:
            shape = g.shape_of(a.type)
            x = self.constant(self.random_array(shape))
            y = self.constant(self.random_array(shape[-1:]))
            self.add(g.WhereOp, [a, x, y], {})

    def shape_op(self) -> None:
        x = self.pick(self.floats)
        shape = g.shape_of(x.type)
        rank = len(shape)
        choice = self.draw(st.integers(0, 5))
        if choice == 0:
            target = np.array([-1] if self.draw(st.booleans()) else [shape[0], -1], np.int64)
            self.add(g.ReshapeOp, [x, self.constant(target)], {})
        elif choice == 1:
            perm = self.draw(st.permutations(range(rank)))
            self.add(g.TransposeOp, [x], {"perm": list(perm)})
        elif choice == 2:
            self.add(g.ConcatOp, [x, x], {"axis": self.draw(st.integers(-rank, rank - 1))})
        elif choice == 3:
            axis = self.draw(st.integers(0, rank - 1))
            n = self.draw(st.integers(1, 3))
            if -(-shape[axis] // n) * (n - 1) >= shape[axis]:
                n = 1  # equal parts would leave an empty last part
            self.add(g.SplitOp, [x], {"axis": axis, "num_outputs": n}, n_results=n)
        elif choice == 4:
            self.add(g.FlattenOp, [x], {"axis": self.draw(st.integers(0, rank))})
        else:
            axes = np.array(self.draw(st.lists(st.integers(0, rank), min_size=1, max_size=2, unique=True)), np.int64)
            self.add(g.UnsqueezeOp, [x, self.constant(axes)], {})

    def reduce(self) -> None:
        x = self.pick(self.floats)
        rank = len(g.shape_of(x.type))
        axes = self.draw(st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank))
        attrs = {"keepdims": self.draw(st.integers(0, 1))}
        cls = self.draw(st.sampled_from(REDUCE))
        if self.draw(st.booleans()):
            self.add(cls, [x, self.constant(np.array(axes, np.int64))], attrs)
        else:
            self.add(g.SoftmaxOp, [x], {"axis": axes[0]})

    def linear(self) -> None:
        x = self.pick(self.floats)
        shape = g.shape_of(x.type)
        n = self.draw(st.integers(1, 4))
        w = self.constant(self.random_array((shape[-1], n)))
        if len(shape) == 2 and self.draw(st.booleans()):
            self.add(g.GemmOp, [x, w, self.constant(self.random_array((n,)))], {"alpha": 0.5})
        else:
            self.add(g.MatMulOp, [x, w], {})

    def norm(self) -> None:
        x = self.pick(self.floats)
        shape = g.shape_of(x.type)
        scale = self.constant(self.random_array(shape[-1:]))
        flags = [True, self.draw(st.booleans()), self.draw(st.booleans())]
        self.add(g.LayerNormalizationOp, [x, scale], {"epsilon": 1e-5}, present=flags)

    def spatial(self) -> None:
        cands = [v for v in self.floats if len(g.shape_of(v.type)) == 4]
        if not cands:
            return self.unary()
        x = self.pick(cands)
        n, c, h, w = g.shape_of(x.type)
        k = self.draw(st.integers(1, min(h, w, 3)))
        choice = self.draw(st.integers(0, 2))
        if choice == 0:
            m = self.draw(st.integers(1, 3))
            wt = self.constant(self.random_array((m, c, k, k)))
            attrs: dict[str, Any] = {"kernel_shape": [k, k]}
            if self.draw(st.booleans()):
                attrs["pads"] = [k // 2] * 4
            self.add(g.ConvOp, [x, wt], attrs)
        elif choice == 1:
            attrs = {"kernel_shape": [k, k], "strides": [self.draw(st.integers(1, 2))] * 2,
                     "ceil_mode": self.draw(st.integers(0, 1))}
            self.add(g.MaxPoolOp, [x], attrs, present=[True, self.draw(st.booleans())])
        else:
            self.add(g.GlobalAveragePoolOp, [x], {})


def draw_module(draw: Any) -> ModuleOp:
    arg_shapes = draw(st.lists(shapes, min_size=1, max_size=3))
    if draw(st.booleans()):
        arg_shapes.append((1, draw(st.integers(1, 3)), draw(st.integers(2, 5)), draw(st.integers(2, 5))))
    b = DagBuilder(draw, arg_shapes)
    gens = [b.unary, b.binary, b.logic, b.shape_op, b.reduce, b.linear, b.norm, b.spatial]
    for _ in range(draw(st.integers(1, 12))):
        draw(st.sampled_from(gens))()
    outs = [b.ops[-1].results[0]] if b.ops else [b.block.args[0]]
    b.block.add_op(ReturnOp(*outs))
    func = FuncOp("main", (list(b.block.arg_types), [v.type for v in outs]), Region(b.block))
    return ModuleOp([func])


_CTX: list[Any] = []


def context() -> Any:
    """One context for all examples (xDSL contexts are costly to make)."""
    if not _CTX:
        _CTX.append(ir_io.make_context())
    return _CTX[0]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_dag_roundtrips(data: st.DataObject) -> None:
    module = draw_module(data.draw)
    module.verify()
    text = ir_io.module_to_text(module)
    parsed = ir_io.parse_module_text(text, ctx=context())
    parsed.verify()
    assert ir_io.module_to_text(parsed) == text
    generic = ir_io.module_to_text(module, generic=True)
    parsed_generic = ir_io.parse_module_text(generic, ctx=context())
    parsed_generic.verify()
    assert ir_io.module_to_text(parsed_generic, generic=True) == generic
    assert ir_io.module_to_text(parsed_generic) == text
