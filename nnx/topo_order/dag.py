"""The op graph of a block, as plain data for the order search.

Nodes are the block's *compute* ops (everything but `graph.constant`, which has no
operands and is never scheduled, and the terminator); `preds[i]` are the nodes whose
results node i reads (data operands and `after` operands alike). Node indices follow
the block order, which is a topological order (the verifier checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Block, Operation


@dataclass(frozen=True)
class OpDag:
    ops: tuple[Operation, ...]
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    sinks: frozenset[int]
    """Nodes whose results leave the graph (returned) or are unused."""

    def __len__(self) -> int:
        return len(self.ops)


def is_scheduled(op: Operation) -> bool:
    """Ops the order search moves: not the terminator, not an operand-free constant."""
    from xdsl.traits import IsTerminator

    if op.has_trait(IsTerminator):
        return False
    return bool(op.operands)


def build_dag(block: Block) -> OpDag:
    """The OpDag of `block`'s scheduled ops (see the module docstring)."""
    ops = [op for op in block.ops if is_scheduled(op)]
    index = {id(op): i for i, op in enumerate(ops)}
    preds: list[tuple[int, ...]] = []
    succs: list[list[int]] = [[] for _ in ops]
    sinks: set[int] = set()
    for i, op in enumerate(ops):
        ps = sorted({index[id(v.owner)] for v in op.operands
                     if isinstance(v.owner, Operation) and id(v.owner) in index})
        preds.append(tuple(ps))
        for p in ps:
            succs[p].append(i)
        leaves = False
        for r in op.results:
            if not r.uses:
                leaves = True
            for u in r.uses:
                if id(u.operation) not in index:
                    leaves = True
        if leaves or not op.results:
            sinks.add(i)
    return OpDag(tuple(ops), tuple(preds), tuple(tuple(s) for s in succs), frozenset(sinks))
