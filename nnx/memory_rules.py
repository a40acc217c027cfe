"""Memory-accounting rules: what the device-memory model counts, calibrated against a
framework (docs/tensor-timing-and-swapping.md, "Calibration against PyTorch").

`nnx.graph_costs.block_timeline` turns a block into timeline data (one value per SSA
value, allocated when its producer starts, freed when its last reader finishes).
A runtime does better than that literal reading of the graph in a few general ways;
each is one rule here, selectable by name. `TORCH` (the default) is what PyTorch's
eager autograd does, every rule but `inplace_elementwise`; `REUSE` adds that one (a
compiler that reuses the buffer of any elementwise op's dead operand); `NONE` is the
literal accounting, kept for comparison:

* `inplace_elementwise`: an elementwise op that is the last reader (in block order) of
  a device tensor with its result's size writes its result into that tensor's buffer
  (PyTorch's in-place ReLU, autograd's in-place gradient accumulation, any buffer-
  reusing allocator): the operand is freed at the op's start instead of its finish,
  so the op never holds both.
* `inplace_update`: an elementwise op whose result is a function result and which
  is the last reader of a resident operand (a parameter or optimizer state) of that
  size updates it in place (`p' = p - lr g`, PyTorch's optimizers): the result
  takes no memory of its own.
* `resident_transpose`: a transpose of a resident value (a parameter, e.g. the
  `Transpose(W)` an exporter writes before a MatMul) is a strided view, as PyTorch's
  `W.t()`; a GEMM reads a transposed operand directly.
* `held_outputs`: the model's output (the value `graph-autodiff` computes the loss
  from, marked `nnx.model_output`) stays allocated until the end of the step, as a
  training loop holds it (`out = model(x); loss = f(out, y); loss.backward()`).
* `maxpool_indices`: a max pool keeps the argmax of every window (int64, one per
  output element) from the forward op until its gradient op reads them, as
  PyTorch's `max_pool2d_with_indices` saves them.

API: `MemoryRules` (frozen dataclass of the flags), `NONE`, `TORCH`, `DEFAULT`,
`REUSE`, `parse_rules(text)` ("torch", "reuse", "none", or a comma list of names, e.g.
"torch,-held_outputs" or "none,+inplace_update"), `apply_rules(...)` (used by
`block_timeline`), and `resident_view(op)` (a value the rules alias to a resident one,
which swap planning must not offer as a candidate).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import BlockArgument, Operation, SSAValue

from nnx.memory_timeline import TimelineOp, TimelineValue, alias_root


@dataclass(frozen=True)
class MemoryRules:
    """Which accounting rules apply (module docstring); the defaults are `TORCH`."""

    inplace_elementwise: bool = False
    inplace_update: bool = True
    resident_transpose: bool = True
    held_outputs: bool = True
    maxpool_indices: bool = True


NONE = MemoryRules(**{f.name: False for f in dataclasses.fields(MemoryRules)})
"""The literal accounting: every SSA value its own buffer, freed after its last reader."""
TORCH = MemoryRules()
"""PyTorch's eager autograd: every rule but `inplace_elementwise` (PyTorch computes a
backward formula into a new tensor; its in-place forward ReLU changes only a forward
transient, not the peak at the start of the backward pass)."""
REUSE = MemoryRules(**{f.name: True for f in dataclasses.fields(MemoryRules)})
"""Every rule: a runtime that also reuses dead elementwise operands' buffers."""
DEFAULT = TORCH
PRESETS = {"torch": TORCH, "reuse": REUSE, "none": NONE}
RULE_NAMES = tuple(f.name for f in dataclasses.fields(MemoryRules))


def parse_rules(text: str) -> MemoryRules:
    """"torch" | "reuse" | "none" | a comma list: a preset first (default torch), then rule
    names, each optionally prefixed with + (on) or - (off). Raises ValueError with
    one line naming the unknown word."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    rules = DEFAULT
    if words and words[0] in PRESETS:
        rules = PRESETS[words.pop(0)]
    for w in words:
        on = not w.startswith("-")
        name = w.lstrip("+-").replace("-", "_")
        if name not in RULE_NAMES:
            raise ValueError(f"unknown memory rule '{w}' (presets: {', '.join(PRESETS)}; "
                             f"rules: {', '.join(RULE_NAMES)})")
        rules = dataclasses.replace(rules, **{name: on})
    return rules


def _resident_value(v: SSAValue) -> bool:
    """A function argument or constant, through views (reshape...)."""
    from nnx.dialects.graph import ConstantOp
    from nnx.dialects.traits import ViewLike

    while isinstance(v.owner, Operation) and v.owner.has_trait(ViewLike) and v.owner.operands:
        v = v.owner.operands[0]
    return isinstance(v, BlockArgument) or isinstance(v.owner, ConstantOp)


def resident_view(op: Operation, rules: MemoryRules = DEFAULT) -> bool:
    """Whether `resident_transpose` makes `op`'s result a view of a resident value."""
    from nnx.dialects.graph import TransposeOp

    return rules.resident_transpose and isinstance(op, TransposeOp) and _resident_value(op.operands[0])


def apply_rules(rules: MemoryRules, op_list: Sequence[Operation], ops: list[TimelineOp],
                values: list[TimelineValue], ids: dict[SSAValue, int]) -> None:
    """Rewrite the timeline data of a block (`ops[i]` is `op_list[i]`, `ids` maps SSA
    values to `values` indices) in place by `rules` (module docstring)."""
    from nnx.dialects.graph import MaxPoolOp
    from nnx.dialects.graph_training import MaxPoolGradOp
    from nnx.dialects.traits import Elementwise

    if rules.resident_transpose:
        for op in op_list:
            if resident_view(op, rules) and op.operands[0] in ids:
                r = ids[op.results[0]]
                values[r] = TimelineValue(0, "device", values[r].keep, ids[op.operands[0]])
    if rules.held_outputs:
        for op in op_list:
            if "nnx.model_output" in op.attributes:
                for res in op.results:
                    k = alias_root(values, ids[res])
                    values[k] = dataclasses.replace(values[k], keep=True)
    last = [-1] * len(values)  # block position of the last reader of each root
    for i, t in enumerate(ops):
        for v in t.reads:
            last[alias_root(values, v)] = i
    for i, op in enumerate(op_list):
        if not op.has_trait(Elementwise) or len(ops[i].writes) != 1:
            continue
        w = ops[i].writes[0]
        out = values[w]
        if out.alias_of >= 0 or out.placement != "device" or out.nbytes == 0:
            continue
        for v in ops[i].reads:
            r = alias_root(values, v)
            src = values[r]
            if last[r] != i or src.nbytes != out.nbytes:
                continue
            if rules.inplace_update and out.keep and src.placement == "resident":
                values[w] = TimelineValue(0, "device", True, v)
                break
            if rules.inplace_elementwise and src.placement == "device" and not src.keep:
                ops[i] = dataclasses.replace(ops[i], inplace=(v,))
                break
    if rules.maxpool_indices:
        index = {op: i for i, op in enumerate(op_list)}
        for g, op in enumerate(op_list):
            if not isinstance(op, MaxPoolGradOp):
                continue
            x, dy = op.operands[0], op.operands[1]
            fwd = next((u.operation for u in x.uses if isinstance(u.operation, MaxPoolOp)
                        and u.operation.results[0].type == dy.type and u.operation in index), None)
            if fwd is None:
                continue
            f = index[fwd]
            elems = math.prod(fwd.results[0].type.get_shape())  # type: ignore[attr-defined]
            values.append(TimelineValue(elems * 8, "device"))  # int64 indices
            k = len(values) - 1
            ops[f] = dataclasses.replace(ops[f], writes=ops[f].writes + (k,))
            ops[g] = dataclasses.replace(ops[g], reads=ops[g].reads + (k,))


__all__ = ["DEFAULT", "MemoryRules", "NONE", "PRESETS", "REUSE", "RULE_NAMES", "TORCH", "apply_rules",
           "parse_rules", "resident_view"]
