"""Fusing neighbours of a chain of ranges while they still compile
(docs/subgraph-split-fuse.md, "In nnx" and "Options").

A fusion of consecutive ranges is accepted when the sums over its parts of compute,
of weight bytes and of mapped cores each lie within their [min, max] window
(`FusionWindow`) and the fused range compiles (`FitChecker`). Strategies:

* `pairwise`: neighbours in groups of `group` (2: pairs); a group that is not
  accepted is tried as smaller groups from its start;
* `greedy`: forward; fuse current and next; on failure keep the current and move on,
  on success continue from the fused one;
* `bidirectional`: the greedy rule from both ends at once, the two fronts meeting in
  the middle;
* `optimal`: a dynamic program over the chain: fewest programs (or least estimated
  time) among all ways of fusing consecutive ranges, with memoised compile checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nnx.diagnostics import PassError
from nnx.graph_costs import value_bytes
from nnx.split_fuse.chain import Range, range_io
from nnx.split_fuse.fit import FitChecker, range_compute, range_weights

STRATEGIES = ("pairwise", "greedy", "bidirectional", "optimal")
OBJECTIVES = ("programs", "time")


@dataclass(frozen=True)
class FusionWindow:
    """The [min, max] windows of the fusion conditions (sums over the fused parts)."""

    min_compute: float = 0
    max_compute: float = math.inf
    min_weights: float = 0
    max_weights: float = math.inf
    min_cores: float = 0
    max_cores: float = math.inf

    def check(self, pass_name: str) -> None:
        """A window with min > max is a `PassError`."""
        for what in ("compute", "weights", "cores"):
            lo, hi = getattr(self, f"min_{what}"), getattr(self, f"max_{what}")
            if lo > hi:
                raise PassError(f"{pass_name}: impossible window for {what}: min-{what}={lo:g} > max-{what}={hi:g}")


@dataclass
class Fuser:
    """Accepts or rejects fusions of consecutive ranges of a chain."""

    check: FitChecker
    window: FusionWindow

    def verdict(self, parts: Sequence[Range]) -> str:
        """"ok" when the parts (consecutive ranges) may become one program; "below"
        when a sum is under its minimum (more parts may reach it); "over" when a sum
        exceeds its maximum or the fused range does not compile."""
        w, ops = self.window, self.check.ops
        compute = sum(range_compute(ops, p) for p in parts)
        weights = sum(range_weights(ops, p) for p in parts)
        cores = sum(self.check.cores(p) for p in parts if self.check.fits(p))
        if compute > w.max_compute or weights > w.max_weights or cores > w.max_cores:
            return "over"
        if not self.check.fits((parts[0][0], parts[-1][1])):
            return "over"
        if compute < w.min_compute or weights < w.min_weights or cores < w.min_cores:
            return "below"
        return "ok"

    def accepts(self, parts: Sequence[Range]) -> bool:
        """Whether the parts (consecutive ranges) may become one program."""
        return self.verdict(parts) == "ok"


def fuse_pairwise(fuser: Fuser, chain: Sequence[Range], group: int = 2) -> list[Range]:
    out: list[Range] = []
    i = 0
    while i < len(chain):
        for k in range(min(group, len(chain) - i), 0, -1):
            if k == 1 or fuser.accepts(chain[i:i + k]):
                out.append((chain[i][0], chain[i + k - 1][1]))
                i += k
                break
    return out


def fuse_greedy(fuser: Fuser, chain: Sequence[Range]) -> list[Range]:
    if not chain:
        return []
    out: list[Range] = []
    cur = [chain[0]]
    for nxt in chain[1:]:
        if fuser.accepts([*cur, nxt]):
            cur.append(nxt)
        else:
            out.append((cur[0][0], cur[-1][1]))
            cur = [nxt]
    out.append((cur[0][0], cur[-1][1]))
    return out


def fuse_bidirectional(fuser: Fuser, chain: Sequence[Range]) -> list[Range]:
    """Greedy from the front and from the back, one step each in turn; where the two
    fronts meet, their current groups are fused if accepted."""
    if len(chain) < 2:
        return list(chain)
    left_done: list[Range] = []
    right_done: list[Range] = []
    left, right = [chain[0]], [chain[-1]]
    i, j = 1, len(chain) - 2  # next unvisited from the front / from the back
    turn = 0
    while i <= j:
        if turn == 0:
            if fuser.accepts([*left, chain[i]]):
                left.append(chain[i])
            else:
                left_done.append((left[0][0], left[-1][1]))
                left = [chain[i]]
            i += 1
        else:
            if fuser.accepts([chain[j], *right]):
                right.insert(0, chain[j])
            else:
                right_done.insert(0, (right[0][0], right[-1][1]))
                right = [chain[j]]
            j -= 1
        turn ^= 1
    if fuser.accepts([*left, *right]):
        middle = [(left[0][0], right[-1][1])]
    else:
        middle = [(left[0][0], left[-1][1]), (right[0][0], right[-1][1])]
    return left_done + middle + right_done


def program_time(fuser: Fuser, r: Range) -> int:
    """Estimated cycles of one program: its weight load and its input/output transfers
    over the host link, and its compute spread over its cores' matrix units (the
    range's cores when it was compiled, else the whole mesh)."""
    from nnx.target import load_target

    tgt = load_target(fuser.check.target)
    io = range_io(fuser.check.ops, *r)
    link = tgt.host_link
    cycles = link.transfer_cycles(range_weights(fuser.check.ops, r))
    cycles += sum(link.transfer_cycles(value_bytes(v)) for v in (*io.inputs, *io.outputs))
    mpu = next(u for u in tgt.units if u.kind == "MPU")
    cores = fuser.check.cores(r) if fuser.check.fits(r) else tgt.mesh.cores
    per_cycle = max(1, mpu.throughput * mpu.count) * max(1, cores)
    return cycles + range_compute(fuser.check.ops, r) // per_cycle


def reaches(fuser: Fuser, chain: Sequence[Range]) -> list[int]:
    """reach[i] = the largest j such that ranges i..j-1 may be one program, found with
    two pointers (a part of an accepted fusion is assumed accepted too, so reach is
    non-decreasing): O(len(chain)) fusion checks."""
    n = len(chain)
    reach = [0] * n
    j = 1
    for i in range(n):
        j = max(j, i + 1)
        while j < n and fuser.accepts(chain[i:j + 1]):
            j += 1
        reach[i] = j
    return reach


def fuse_optimal(fuser: Fuser, chain: Sequence[Range], objective: str = "programs") -> list[Range]:
    """Dynamic program over the chain: best[j] = the best cost of the first j ranges,
    over the last program fusing ranges i..j-1 (cost 1, or `program_time`).

    With open minimum windows every fusion i..j-1 with j <= reach[i] is accepted
    (`reaches`), so the DP needs O(N) compile checks. With a minimum window (a
    fusion may be under a minimum and a larger one accepted) each start is extended
    until its first fusion over a maximum or failing to compile; one under a
    minimum is skipped."""
    n = len(chain)
    w = fuser.window
    minimums = w.min_compute > 0 or w.min_weights > 0 or w.min_cores > 0
    reach = None if minimums else reaches(fuser, chain)
    cost: Callable[[Range], float] = (lambda r: 1) if objective == "programs" else (lambda r: program_time(fuser, r))
    best = [math.inf] * (n + 1)
    back = [0] * (n + 1)
    best[0] = 0
    for i in range(n):
        if best[i] == math.inf:
            continue
        for j in range(i + 1, n + 1):
            if reach is not None:
                if j > reach[i]:
                    break
            elif j - i > 1:
                v = fuser.verdict(chain[i:j])
                if v == "over":
                    break
                if v == "below":
                    continue
            r = (chain[i][0], chain[j - 1][1])
            c = best[i] + cost(r)
            if c < best[j]:
                best[j], back[j] = c, i
    out: list[Range] = []
    j = n
    while j > 0:
        i = back[j]
        parts = list(chain[i:j])
        # a program the DP assumed accepted is checked; if it is not, its parts are
        # fused greedily instead (every program kept compiles)
        out.extend(reversed([parts[0]] if len(parts) == 1 else
                            [(parts[0][0], parts[-1][1])] if fuser.accepts(parts) else fuse_greedy(fuser, parts)))
        j = i
    return out[::-1]


def fuse_chain(fuser: Fuser, chain: Sequence[Range], strategy: str, objective: str = "programs",
               group: int = 2) -> list[Range]:
    """The chain after fusing with `strategy` (one of `STRATEGIES`)."""
    if strategy == "pairwise":
        return fuse_pairwise(fuser, chain, group)
    if strategy == "greedy":
        return fuse_greedy(fuser, chain)
    if strategy == "bidirectional":
        return fuse_bidirectional(fuser, chain)
    return fuse_optimal(fuser, chain, objective)
