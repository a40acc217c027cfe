"""`tensor-timing{target=FILE mode=asap|schedule report=PATH}`: TAT/TRT/TTS of every op.

Annotates each op of every function body with its delay and timing
(docs/tensor-timing-and-swapping.md, "The timing analysis"):

* `nnx.delay`: cycles of the op by the target's cost formulas (nnx/graph_costs.py);
* `nnx.tat`: when its results are available; `nnx.trt`: when it needs its inputs;
* `nnx.tts`: one slack per operand (data inputs, then `after` operands), TRT minus
  the TAT of that operand (function arguments arrive at 0).

`mode=asap` (default) is the linear-time queue algorithm over the dataflow graph
(unlimited units, `after` edges count as inputs); `mode=schedule` times the block's
own order on the target's units (`nnx.memory_timeline.simulate`): the slack a tensor
really has in that schedule. `report=PATH` writes a text table (`-`: stderr).

    nnx-opt m.mlir -p 'tensor-timing{target="targets/v100.toml" mode=schedule}'
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError
from nnx.tensor_timing import EXTERNAL, Timing, asap_timing, scheduled_timing

TIMING_MODES = ("asap", "schedule")


@dataclass(frozen=True)
class BlockTiming:
    """Timing of the non-terminator ops of a block (`ops[i]` has `delays[i]`,
    `preds[i]` per operand, `timing.tat[i]`...)."""

    ops: list[Operation]
    delays: list[int]
    preds: list[list[int]]
    timing: Timing


def block_timing(block: Block, target, mode: str = "asap") -> BlockTiming:
    """TAT/TRT/TTS of the ops of `block` by `mode` ("asap" or "schedule")."""
    from nnx.graph_costs import block_timeline, op_unit_cycles
    from nnx.memory_timeline import simulate

    ops = [op for op in block.ops if op.next_op is not None]
    index = {op: i for i, op in enumerate(ops)}
    preds = [[index.get(v.owner, EXTERNAL) if isinstance(v.owner, Operation) else EXTERNAL
              for v in op.operands] for op in ops]
    if mode == "schedule":
        bt = block_timeline(block, target)
        tl = simulate(bt.ops, bt.values, bt.units)
        delays = [o.cycles for o in bt.ops]
        timing = scheduled_timing(preds, tl.start, tl.finish)
    else:
        delays = [op_unit_cycles(target, op)[1] for op in ops]
        timing = asap_timing(delays, preds)
    return BlockTiming(ops, delays, preds, timing)


def _report(funcs: list[tuple[str, BlockTiming]]) -> str:
    lines = []
    for fname, bt in funcs:
        lines.append(f"# tensor-timing @{fname}: op, delay, TAT, TRT, TTS per operand")
        for i, op in enumerate(bt.ops):
            t = bt.timing
            lines.append(f"{i}\t{op.name}\t{bt.delays[i]}\t{t.tat[i]}\t{t.trt[i]}\t"
                         + ",".join(str(x) for x in t.tts[i]))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TensorTimingPass(ModulePass):
    """Annotate `nnx.delay`, `nnx.tat`, `nnx.trt`, `nnx.tts` (see the module docstring)."""

    name = "tensor-timing"

    target: str = ""
    mode: str = "asap"
    report: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.mode not in TIMING_MODES:
            raise PassError(f"tensor-timing: mode must be one of {list(TIMING_MODES)}, got '{self.mode}'")
        from nnx.target import load_pass_target

        target = load_pass_target("tensor-timing", self.target)
        done = []
        for f in op.walk():
            if not isinstance(f, FuncOp) or not f.body.blocks:
                continue
            bt = block_timing(f.body.block, target, self.mode)
            for i, o in enumerate(bt.ops):
                t = bt.timing
                o.attributes["nnx.delay"] = IntegerAttr(bt.delays[i], i64)
                o.attributes["nnx.tat"] = IntegerAttr(t.tat[i], i64)
                o.attributes["nnx.trt"] = IntegerAttr(t.trt[i], i64)
                o.attributes["nnx.tts"] = DenseArrayBase.from_list(i64, t.tts[i])
            done.append((f.sym_name.data, bt))
        if self.report:
            text = _report(done)
            if self.report == "-":
                sys.stderr.write(text)
            else:
                from nnx.atomic_file import atomic_open

                try:
                    with atomic_open(self.report, "w", encoding="utf-8") as fh:
                        fh.write(text)
                except OSError as e:
                    raise PassError(f"tensor-timing: cannot write report '{self.report}': {e.strerror}") from None
