"""graph-autodiff: turn a model's `func.func @main` into one training step.

    nnx-opt model.mlir -p 'graph-autodiff{loss=cross-entropy optimizer=sgd lr=0.1}'

The function gains an argument `labels` (cross-entropy: int64 class indices shaped
like the first result without its last dimension; mse: a float target shaped like the
first result) and, for optimizers with state, one argument per state tensor. It then
returns `loss` (rank-0, mean over the batch) followed by, for every parameter in
block order, `grad_<name>` (optimizer=none) or `new_<name>` (the updated parameter),
then the updated optimizer state (`new_velocity_<name>`, `new_adam_m_<name>`,
`new_adam_v_<name>`, `new_adam_step`). Names are `nnx.name` attributes, so
`nnx-run --interpret` writes `loss.npy`, `grad_conv1.weight.npy`, ...

A parameter is a float `graph.constant` of rank >= 1 that the loss depends on through
differentiable operands and whose name is a parameter name: by default any name but
the exporter's node outputs (starting with `/`: Constant nodes and constants the
importer folded), with `params=<regex>` the names fully matching the
regex. `<name>` is the importer's name for it (the ONNX initializer name). Dropout is the identity (its gradient passes through unchanged); the model's
other results are dropped. docs/training.md has the losses, the optimizer formulas and
the backward rules (nnx/autodiff/).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError

NAME = "graph-autodiff"


@dataclass(frozen=True)
class GraphAutodiffPass(ModulePass):
    """One training step: loss, gradients or updated parameters (module docstring)."""

    name = "graph-autodiff"

    loss: str = "cross-entropy"
    optimizer: str = "none"
    lr: int | float = 0.01
    momentum: int | float = 0.9
    beta1: int | float = 0.9
    beta2: int | float = 0.999
    eps: int | float = 1e-8
    params: str = ""
    forward_masks: bool = False
    """Compute narrow backward results (Relu's masks) in the forward pass
    (`hoist_narrow_results`); false (the default): where the backward rules emit
    them."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.autodiff.loss import LOSSES
        from nnx.autodiff.optimizers import OPTIMIZERS

        if self.loss not in LOSSES:
            raise PassError(f"{NAME}: loss must be one of {', '.join(LOSSES)}, not '{self.loss}'")
        if self.optimizer not in OPTIMIZERS:
            raise PassError(
                f"{NAME}: optimizer must be one of {', '.join(OPTIMIZERS)}, not '{self.optimizer}'"
            )
        _param_pattern(self.params)
        if not float(self.lr) > 0:
            raise PassError(f"{NAME}: lr must be positive, got {self.lr}")
        funcs = [f for f in op.ops if isinstance(f, FuncOp)]
        main = next((f for f in funcs if f.sym_name.data == "main"), None)
        if main is None and len(funcs) == 1:
            main = funcs[0]
        if main is None:
            raise PassError(f"{NAME}: the module has no func.func @main")
        build_training_step(main, self)


def _param_pattern(text: str) -> re.Pattern[str] | None:
    """The `params` option compiled (None when empty: the default rule)."""
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as e:
        raise PassError(f"{NAME}: params is not a regular expression: '{text}': {e}") from None


def _names(attrs: ArrayAttr | None, n: int) -> list[DictionaryAttr]:
    if attrs is None:
        return [DictionaryAttr({}) for _ in range(n)]
    return list(attrs.data)


def _named(name: str) -> DictionaryAttr:
    return DictionaryAttr({"nnx.name": StringAttr(name)})


def build_training_step(func: FuncOp, opts: GraphAutodiffPass) -> None:
    """Rewrite `func` in place into the training step described by `opts`."""
    from nnx.autodiff.differentiate import (
        active_values,
        check_flat,
        constant_name,
        differentiate,
        parameters,
    )
    from nnx.autodiff.emitter import Emitter, EmitError, dtype_of, is_float
    from nnx.autodiff.loss import emit_loss, labels_type
    from nnx.autodiff.optimizers import STATE, Hyper, update

    block = func.body.block
    ret = block.last_op
    if not isinstance(ret, ReturnOp) or not ret.operands:
        raise PassError(f"{NAME}: @{func.sym_name.data} returns nothing to train", func)
    check_flat(block, NAME)
    output = ret.operands[0]
    if not is_float(output):
        raise PassError(f"{NAME}: the first result has type {output.type}, not a float tensor", ret)
    if opts.loss == "cross-entropy" and len(TensorType.get_shape(output.type)) < 1:
        raise PassError(f"{NAME}: cross-entropy needs a first result of rank >= 1 (classes last)", ret)

    _dropout_as_identity(block)
    candidates = parameters(block, _param_pattern(opts.params))
    active = active_values(block, [c.output for c in candidates])
    if output not in active:
        raise PassError(f"{NAME}: the first result does not depend on any parameter", ret)

    arg_attrs = _names(func.arg_attrs, len(block.args))
    labels = block.insert_arg(labels_type(opts.loss, output), len(block.args))
    arg_attrs.append(_named("labels"))

    forward = set(block.ops)
    em = Emitter(block, ret)
    try:
        loss, seed = emit_loss(em, opts.loss, output, labels)
    except EmitError as e:
        raise PassError(f"{NAME}: cannot build the {opts.loss} loss: {e}", ret) from None
    if isinstance(output.owner, Operation):
        # the value the training loop holds until the step ends (nnx/memory_rules.py)
        output.owner.attributes["nnx.model_output"] = UnitAttr()
    grads = differentiate(block, em, {output: seed}, active, NAME)

    params = [c for c in candidates if c.output in grads]
    names: list[str] = []
    taken: set[str] = set()
    for i, c in enumerate(params):
        n = constant_name(c) or f"param{i}"
        base, k = n, 1
        while n in taken:
            k += 1
            n = f"{base}_{k}"
        taken.add(n)
        names.append(n)

    results = [loss]
    res_attrs = [_named("loss")]
    if opts.optimizer == "none":
        for c, n in zip(params, names):
            results.append(grads[c.output])
            res_attrs.append(_named(f"grad_{n}"))
    else:
        hyper = Hyper(float(opts.lr), float(opts.momentum), float(opts.beta1),
                      float(opts.beta2), float(opts.eps))
        state_names = STATE[opts.optimizer]
        state_args = []
        for c, n in zip(params, names):
            vals = []
            for s in state_names:
                vals.append(block.insert_arg(c.output.type, len(block.args)))
                arg_attrs.append(_named(f"{s}_{n}"))
            state_args.append(vals)
        step = None
        if opts.optimizer == "adam":
            dt = TensorType(TensorType.get_element_type(loss.type), [])
            step = block.insert_arg(dt, len(block.args))
            arg_attrs.append(_named("adam_step"))
        new_states = []
        for c, n, st in zip(params, names, state_args):
            new_p, new_st = update(em, opts.optimizer, c.output, grads[c.output], st, hyper, step)
            results.append(new_p)
            res_attrs.append(_named(f"new_{n}"))
            new_states.append(new_st)
        for n, new_st in zip(names, new_states):
            for s, v in zip(state_names, new_st):
                results.append(v)
                res_attrs.append(_named(f"new_{s}_{n}"))
        if step is not None:
            results.append(em.add(step, em.const(1.0, dtype_of(step))))
            res_attrs.append(_named("new_adam_step"))

    new_ret = ReturnOp(*results)
    new_ret.location = ret.location
    block.insert_op_before(new_ret, ret)
    block.erase_op(ret)
    func.function_type = FunctionType.from_lists(
        [a.type for a in block.args], [v.type for v in results]
    )
    func.arg_attrs = ArrayAttr(arg_attrs)
    func.res_attrs = ArrayAttr(res_attrs)
    _drop_dead(block)
    if opts.forward_masks:
        hoist_narrow_results(block, forward)


def hoist_narrow_results(block, forward: set) -> int:
    """Move each backward elementwise op that reads only forward values and constants
    and whose result is narrower than the forward tensor it reads (the i1 mask
    `x > 0` of Relu's gradient) to right after the forward producer: the backward
    pass then keeps the 1-byte mask instead of the 4-byte tensor, which is freed as
    soon as the forward pass is done with it, and a swap or compression plan never
    has to restore it exactly (docs/training.md, "Masks in the forward pass").
    Returns the number of ops moved."""
    from nnx.dialects.graph import ConstantOp
    from nnx.dialects.traits import Elementwise
    from nnx.graph_costs import value_bytes

    pos = {op: i for i, op in enumerate(block.ops)}
    moved = 0
    for op in [o for o in block.ops if o not in forward]:
        if not op.has_trait(Elementwise) or not op.results or not op.operands:
            continue
        consts = [v.owner for v in op.operands if isinstance(v.owner, ConstantOp)]
        data = [v for v in op.operands if not isinstance(v.owner, ConstantOp)]
        if not data or any(v.owner not in forward and v.owner is not block for v in data):
            continue
        if max(value_bytes(r) for r in op.results) >= max(value_bytes(v) for v in data):
            continue
        producers = [v.owner for v in data if v.owner in pos]
        anchor = max(producers, key=pos.__getitem__) if producers else None
        op.detach()
        if anchor is None:
            block.insert_op_before(op, block.first_op)
        else:
            block.insert_op_after(op, anchor)
        for c in consts:  # constants read nothing: at the top they dominate every use
            if c is not block.first_op:
                c.detach()
                block.insert_op_before(c, block.first_op)
        moved += 1
    return moved


def _dropout_as_identity(block) -> None:
    """Dropout's output becomes its input: the training step is deterministic and the
    gradient passes through unchanged (docs/training.md)."""
    from nnx.dialects.graph import DropoutOp

    for op in list(block.ops):
        if isinstance(op, DropoutOp):
            op.output.replace_all_uses_with(op.data)


def _drop_dead(block) -> None:
    """Erase side-effect-free ops whose results are unused (the model's other outputs,
    the forward BatchNormalization running statistics, ...), last to first."""
    from nnx.dialects.graph import ConstantOp, GraphOp

    for op in reversed(list(block.ops)):
        if isinstance(op, (GraphOp, ConstantOp)) and all(not r.uses for r in op.results):
            block.erase_op(op)
