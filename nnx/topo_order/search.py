"""The search: key nodes -> subgraphs -> candidate orders -> costs -> one order.

`search_order(module, func_name, options, target)` returns a `SearchResult`: the
chosen whole-graph order and, per subgraph, the orders tried, their costs, the best
cost and the time spent. Steps (docs/topological-order.md, "The search"):

1. the op DAG, its key nodes, the subgraphs between them (small ones merged);
2. per subgraph, candidate orders: all of them when there are at most `max_orders`,
   else the ONNX order, the HEFT order, the subgraph's part of `baseline_random`
   whole-graph random orders, `max_orders` random ones and (search=beam/auto) a
   beam search under the graph-level estimate; search=heft/random/onnx restrict
   the candidates to that kind;
3. every candidate is costed by the graph-level estimate; with cost=model or
   cost=simulate candidates are compiled on their own (compile_cache) and costed by
   the compiled measure: every order of a subgraph with at most
   `exhaustive_compile`, else the ONNX order and the `shortlist` best by estimate,
   then HEFT's, the beam's and the random whole orders' parts, then the rest, while
   the subgraph's share of `budget` seconds lasts;
4. the whole-graph order is the concatenation of the subgraphs' best orders. When
   `verify`, whole models are compiled and simulated (docs/topological-order.md, "The
   whole-model check"): the ONNX and HEFT orders first, then, in the same stream,
   the random whole orders while all of them still fit in the time limit (before
   step 3, which then gets a part of the time left), then the searched order and
   the random whole orders not compiled yet (best composed per-subgraph cost
   first), then batches of a local search around the best whole order so far
   (`_neighbours`); the fewest simulated cycles win (ties keep the ONNX order):
   never slower than the ONNX and HEFT orders, nor than any whole order compiled,
   hence than the best of the random whole orders when they all fitted.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from nnx.target import Target
from nnx.topo_order import orders as O
from nnx.topo_order.compile_cache import CompileCache
from nnx.topo_order.cost import estimate_order, op_cost, Timeline
from nnx.topo_order.dag import OpDag, build_dag
from nnx.topo_order.extract import extract_function, ordered_clone
from nnx.topo_order.key_nodes import key_nodes
from nnx.topo_order.subgraphs import merge_small, split_at_key_nodes

SEARCHES = ("auto", "all", "random", "beam", "heft", "onnx")
TIMINGS = ("direct", "ir")


@dataclass(frozen=True)
class SearchOptions:
    search: str = "auto"
    cost: str = "simulate"
    max_orders: int = 64
    merge_below: int = 3
    seed: int = 0
    shortlist: int = 3
    budget: float = 10.0
    time_limit: float = 30.0
    exhaustive_compile: int = 24
    beam_width: int = 8
    baseline_random: int = 20
    verify_random: int = 20
    local_search: int = 200
    verify: bool = True
    schedule: bool = True
    target_path: str = ""
    jobs: int = 1
    progress: bool = True
    random_first: bool = True
    """The whole-model check compiles the random whole orders before the local
    search (false: batches of the two alternate, the earlier behaviour)."""
    timing: str = "direct"
    """How a compiled candidate is timed: "direct" (the lowering's instructions timed
    without chip IR, tile plans memoized across candidates; the same cycles) or "ir"
    (`lower-to-chip` on chip IR, every candidate from scratch: the original method)."""


@dataclass
class SubgraphReport:
    nodes: list[int]
    key: int | None
    orders_total: str
    tried: list[dict]
    best_cost: int
    best_order: list[int]
    seconds: float


@dataclass
class SearchResult:
    order: tuple[int, ...]
    dag: OpDag
    keys: list[int]
    parts: list[list[int]]
    subgraphs: list[SubgraphReport] = field(default_factory=list)
    whole: dict[str, int] = field(default_factory=dict)
    chosen: str = "onnx"
    seconds: float = 0.0
    compiled: int = 0
    cache_hits: int = 0
    verified_random: int = 0
    local_searched: int = 0
    measured: dict[tuple[int, ...], int] = field(default_factory=dict)
    """Every whole order the whole-model check compiled (or took from the search,
    one subgraph), with its simulated cycles: the result is the fewest of them."""


class _Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal and the
    search has run for more than a second."""

    def __init__(self, total: int, enabled: bool):
        self.total = max(total, 1)
        self.t0 = time.monotonic()
        self.enabled = enabled and sys.stderr.isatty()
        self.shown = False

    def step(self, done: int, what: str) -> None:
        if not self.enabled or time.monotonic() - self.t0 < 1.0:
            return
        w = 30
        k = int(w * done / self.total)
        sys.stderr.write(f"\rtopo-reorder [{'#' * k}{'.' * (w - k)}] {done}/{self.total} {what[:30]:<30}")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _producers(dag: OpDag) -> list[list[int]]:
    index = {id(op): i for i, op in enumerate(dag.ops)}
    return [[index.get(id(v.owner), -1) for v in op.operands] for op in dag.ops]


def _compile_queue(scored, cands, local_onnx, opts: SearchOptions, exhaustive: bool) -> list[tuple[int, ...]]:
    """Candidates in the order they are compiled: the ONNX order, the best by
    estimate, HEFT's and the beam's, then the random whole orders' parts (the
    baselines the result must beat), then the rest by estimate. Every order of a
    small exhaustive subgraph (at most `exhaustive_compile`) is compiled."""
    by_est = [o for _, o in scored]
    if opts.shortlist <= 0 or (exhaustive and len(by_est) <= opts.exhaustive_compile):
        head = by_est
    else:
        head = [local_onnx] + by_est[:opts.shortlist]
        head += [o for o in by_est if cands[o] in ("heft", "beam")]
        head += [o for o in by_est if cands[o] == "random-whole"][: opts.baseline_random]
    return list(dict.fromkeys(head + by_est))


def search_order(module: ModuleOp, func_name: str, opts: SearchOptions, target: Target) -> SearchResult:
    t_start = time.monotonic()
    f = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == func_name)
    dag = build_dag(f.body.block)
    n = len(dag)
    preds = dag.preds
    keys = key_nodes(preds, dag.sinks)
    parts = merge_small(split_at_key_nodes(n, keys, preds), opts.merge_below)
    costs = [op_cost(op, target) for op in dag.ops]
    prods = _producers(dag)
    rank = O.upward_ranks(n, dag.succs, [c.compute for c in costs])
    onnx = tuple(range(n))
    heft = O.heft_order(onnx, preds, rank)
    rng = random.Random(opts.seed)
    whole_random = [O.random_order(onnx, preds, rng) for _ in range(opts.baseline_random)]
    cache = CompileCache(opts.target_path, opts.schedule, opts.jobs, opts.timing == "direct")
    result = SearchResult(onnx, dag, keys, parts)
    bar = _Progress(len(parts), opts.progress)

    def est(order) -> int:
        return estimate_order(order, preds, costs, target, prods)

    # the graph-level timeline after the subgraphs chosen so far: a subgraph's
    # candidates are timed from it (the same as est(prefix + order), without
    # replaying the prefix for each)
    timeline = Timeline(preds, costs, target, prods)

    def est_after(order) -> int:
        return timeline.copy().run(order).cycles()

    # the whole-model check's fixed baselines first (the ONNX and HEFT orders), then
    # the random whole orders while all of them can still be compiled in the time
    # limit: the result is then never slower than the best of them, whatever the
    # per-subgraph phase takes. When they cannot all fit (a whole order is slow next
    # to the limit) the stream stops and the per-subgraph phase comes first: its
    # compiled subgraph costs rank the rest for the whole-model check.
    sub_deadline = t_start + opts.budget
    whole_time = 0.0  # one whole order's compile time per worker
    pre: dict[tuple[int, ...], int] = {}  # whole orders measured before the per-subgraph phase
    if opts.verify and len({onnx, heft, *whole_random}) > 1:
        t0 = time.monotonic()
        jobs = max(1, opts.jobs)
        fixed = list(dict.fromkeys((onnx, heft)))
        randoms = [o for o in dict.fromkeys(whole_random) if o not in fixed][: max(opts.verify_random, 0)]
        stream = fixed + (sorted(randoms, key=est) if opts.time_limit > 0 and opts.random_first else [])
        end = t_start + 0.97 * opts.time_limit
        # reserve: the check's first batch (the searched order) and, with schedule,
        # the unscheduled compiles of the final pipeline check (a fresh pool and
        # plan memo: taken as long as a scheduled compile)
        factor = 2.4 if opts.schedule else 1.2

        def keep_going(seconds: list[float], left: int) -> bool:
            if len(seconds) < len(fixed):
                return True
            per = max(seconds[-jobs:])
            if len(seconds) < len(fixed) + jobs:
                # (the first compiles are slower, the memo is cold: their time is
                # the estimate only for whether one more round fits)
                return time.monotonic() + per <= end - factor * per
            return time.monotonic() + per * -(-left // jobs) <= end - factor * per

        ms = cache.measure_until([ordered_clone(module, func_name, o) for o in stream],
                                 end if opts.time_limit > 0 else float("inf"), keep_going)
        pre.update((o, m.simulate) for o, m in zip(stream, ms) if m is not None)
        missing = [o for o in fixed if o not in pre]
        if missing:  # the ONNX and HEFT orders are always measured
            pre.update(zip(missing, (m.simulate for m in cache.measure_all(
                [ordered_clone(module, func_name, o) for o in missing]))))
        secs = cache.seconds[-jobs:] or [time.monotonic() - t0]
        whole_time = max(secs)
        all_random = all(o in pre for o in randoms)
        sub_deadline = time.monotonic() + opts.budget
        if opts.time_limit > 0:
            # at most a part of the time left goes to the per-subgraph phase (a
            # quarter; a third when the random whole orders are done and there are
            # several subgraphs -- one subgraph is the whole model, whose random
            # candidates the local search around the best order beats): the
            # whole-model check measures the real cost, which the composed subgraph
            # costs only approximate
            now = time.monotonic()
            left = t_start + opts.time_limit - now
            part = 3 if all_random and len(parts) > 1 else 4
            sub_deadline = min(sub_deadline, now + max(0.0, left) / part,
                               t_start + opts.time_limit - factor * whole_time)
    chosen: list[int] = []
    keyset = set(keys)
    part_costs: list[dict[tuple[int, ...], int]] = []
    for pi, part in enumerate(parts):
        t0 = time.monotonic()
        local_onnx = tuple(part)
        exhaustive = O.all_orders(part, preds, opts.max_orders) if opts.search in ("auto", "all") else None
        cands: dict[tuple[int, ...], str] = {local_onnx: "onnx"}
        if exhaustive is not None:
            for o in exhaustive:
                cands.setdefault(o, "all")
            total = str(len(exhaustive))
        else:
            total = f">{opts.max_orders}" if opts.search in ("auto", "all") else "?"
            inside = set(part)
            if opts.search in ("auto", "all", "heft", "beam"):
                cands.setdefault(tuple(v for v in heft if v in inside), "heft")
            if opts.search in ("auto", "all", "random"):
                for o in whole_random:
                    cands.setdefault(tuple(v for v in o if v in inside), "random-whole")
                for o in O.random_orders(part, preds, opts.max_orders, rng):
                    cands.setdefault(o, "random")
            if opts.search in ("auto", "beam"):
                b = O.beam_order(part, preds, opts.beam_width, est_after)
                cands.setdefault(b, "beam")
        scored = sorted(((est_after(o), o) for o in cands), key=lambda t: (t[0], t[1] != local_onnx))
        tried = [{"order": list(o), "kind": cands[o], "estimate": c} for c, o in scored]
        best_cost, best = scored[0]
        by: dict[tuple[int, ...], int] = {}
        if opts.cost in ("model", "simulate") and len(scored) > 1:
            queue = _compile_queue(scored, cands, local_onnx, opts, exhaustive is not None)
            share = opts.budget * len(part) / max(n, 1)
            if exhaustive is not None and len(queue) <= opts.exhaustive_compile:
                share = float("inf")  # a small subgraph: every order, proven best
            share = min(share, max(0.0, sub_deadline - time.monotonic()))
            by = {}
            batch = max(2, opts.jobs)
            k0 = 0
            while k0 < len(queue):
                # the shortlist while the budget lasts; then more while this subgraph's
                # time share lasts
                if time.monotonic() > sub_deadline:
                    break
                if 0 < opts.shortlist < k0 and time.monotonic() - t0 > share:
                    break
                chunk = queue[k0:k0 + (max(opts.shortlist + 1, batch) if k0 == 0 else batch)]
                k0 += len(chunk)
                try:
                    ms = cache.measure_all([extract_function(dag, o) for o in chunk])
                except Exception:  # noqa: BLE001 - a piece that does not compile alone
                    break
                for o, m in zip(chunk, ms):
                    by[o] = getattr(m, opts.cost)
            if by:
                for t in tried:
                    if tuple(t["order"]) in by:
                        t[opts.cost] = by[tuple(t["order"])]
                best = min(by, key=lambda o: (by[o], o != local_onnx))
                best_cost = by[best]
            else:  # the budget was spent before this subgraph: keep its ONNX order
                best = local_onnx
        part_costs.append(by if opts.cost in ("model", "simulate") and len(scored) > 1 else {})
        chosen.extend(best)
        timeline.run(best)
        key = next((v for v in reversed(part) if v in keyset), None)
        result.subgraphs.append(SubgraphReport(
            list(part), key, total, tried, int(best_cost), list(best), time.monotonic() - t0))
        bar.step(pi + 1, f"subgraph {pi}")
    searched = tuple(chosen)
    final = searched
    result.chosen = "search"
    if opts.verify and len({onnx, searched, heft, *whole_random}) > 1:
        final = _whole_check(module, func_name, opts, cache, result, parts, part_costs,
                             [onnx, searched, heft], whole_random, est, t_start, whole_time, pre)
        if opts.schedule and final != onnx:
            if opts.time_limit > 0 and time.monotonic() + 1.2 * whole_time > t_start + opts.time_limit:
                # no time left for the pipeline check: the ONNX order, never slower
                final, result.chosen = onnx, "onnx"
            else:
                final = _pipeline_check(module, func_name, opts, result, onnx, final)
    elif searched == onnx:
        result.chosen = "onnx"
    bar.close()
    result.order = final
    result.seconds = time.monotonic() - t_start
    result.compiled = cache.compiled
    result.cache_hits = cache.hits
    return result


def composed_cost(order: tuple[int, ...], parts: list[list[int]],
                  part_costs: list[dict[tuple[int, ...], int]]) -> int | None:
    """A whole order's cost composed from its subgraphs' compiled costs (each part
    compiled alone, from the compile cache), or None when a part was not compiled.
    Subgraphs run one after another, so the sum ranks whole orders without compiling
    them; it is not the whole model's cycles (results resident across a key node,
    overlap at the boundaries), which is why the whole-model check compiles."""
    total = 0
    for part, by in zip(parts, part_costs):
        if len(part) == 1:
            continue
        inside = set(part)
        c = by.get(tuple(v for v in order if v in inside))
        if c is None:
            return None
        total += c
    return total


def _pipeline_check(module, func_name, opts: SearchOptions, result: SearchResult,
                    onnx: tuple[int, ...], final: tuple[int, ...]) -> tuple[int, ...]:
    """With schedule=true the orders are measured by their scheduled programs, but
    the default `lower-to-chip` keeps the faster of the scheduled and unscheduled
    programs (`keep-faster`). The final order must not lose to the ONNX order under
    that pipeline: both are also compiled unscheduled (one batch) and the ONNX order
    is kept when min(scheduled, unscheduled) of the final order is larger."""
    plain = CompileCache(opts.target_path, False, opts.jobs, opts.timing == "direct")
    sf = [m.simulate for m in plain.measure_all([ordered_clone(module, func_name, o) for o in (onnx, final)])]
    pipe_onnx = min(result.measured[onnx], sf[0])
    pipe_final = min(result.measured[final], sf[1])
    result.whole["onnx-pipeline"] = pipe_onnx
    result.whole[f"{result.chosen}-pipeline"] = pipe_final
    if pipe_final > pipe_onnx:
        result.chosen = "onnx"
        return onnx
    return final


def _neighbours(incumbent: tuple[int, ...], parts, part_costs, dag: OpDag, rng: random.Random,
                seen: set, count: int) -> list[tuple[int, ...]]:
    """Up to `count` whole orders near `incumbent` not in `seen`: first each
    subgraph's compiled alternatives put in the incumbent's context (its part
    replaced by that subgraph's next best order by compiled cost), then random moves
    of one to three ops (`orders.perturbed_order`)."""
    out: list[tuple[int, ...]] = []
    pos = {v: k for k, v in enumerate(incumbent)}
    for part, by in zip(parts, part_costs):
        if len(out) >= count:
            break
        if len(by) < 2:
            continue
        cur = tuple(sorted(part, key=pos.__getitem__))
        start = min(pos[v] for v in part)
        for alt in sorted(by, key=lambda o: (by[o], o)):
            if alt == cur:
                continue
            # a subgraph's ops are contiguous in every order the search builds (the
            # concatenation of parts); a perturbed incumbent may have split them
            if max(pos[v] for v in part) - start + 1 != len(part):
                break
            cand = incumbent[:start] + alt + incumbent[start + len(part):]
            if cand not in seen:
                out.append(cand)
                seen.add(cand)
                break
    tries = 0
    while len(out) < count and tries < 20 * count:
        tries += 1
        cand = O.perturbed_order(incumbent, dag.preds, dag.succs, rng, 1 + rng.randrange(3))
        if cand not in seen:
            out.append(cand)
            seen.add(cand)
    return out


def _whole_check(module, func_name, opts: SearchOptions, cache: CompileCache, result: SearchResult,
                 parts, part_costs, fixed, whole_random, est, t_start: float,
                 fixed_time: float = 0.0, pre: dict | None = None) -> tuple[int, ...]:
    """Compile and simulate whole-model candidates; the fewest cycles win, ties keep
    the ONNX order. `pre`: whole orders measured before the per-subgraph search (the
    ONNX and HEFT orders, and the random whole orders that fitted). Then the searched
    order and the random whole orders not measured yet (best composed cost first, at
    most `verify_random` in all) stream through one pool until the `time_limit` (0:
    no limit); then, `jobs` at a time while the limit lasts (a batch is taken to last
    1.2x the slowest one), batches of a local search around the best order measured
    so far (`_neighbours`: subgraph alternatives in the whole-model context, random
    op moves; at most `local_search` orders). With `random_first=false` the searched
    order is one batch and random and local-search batches take turns. Every order
    compiled is a candidate: the result is never slower than any of them.
    `fixed_time`: one whole order's compile time per worker (the first estimate of a
    batch)."""
    onnx, searched, heft = fixed
    names = {"onnx": onnx, "search": searched, "heft": heft}
    uniq: dict[tuple[int, ...], str] = {}
    for nm, o in names.items():
        uniq.setdefault(o, nm)

    def rank(o):
        c = composed_cost(o, parts, part_costs)
        return (c is None, c or 0, est(o))

    randoms = [o for o in sorted(dict.fromkeys(whole_random), key=rank) if o not in uniq]
    randoms = randoms[: max(opts.verify_random, 0)]
    jobs = max(1, opts.jobs)
    cyc: dict[tuple[int, ...], int] = {}
    if len(parts) == 1 and opts.cost == "simulate":
        # one subgraph: the search compiled whole orders already (a subgraph compiled
        # alone is the whole model; the same cycles, tested)
        cyc.update(part_costs[0])
    # the ONNX and HEFT orders (and, when they fitted, the random whole orders)
    # compiled before the per-subgraph phase
    cyc.update(pre or {})
    for o in uniq:
        if o not in cyc:
            known = cache.entries.get(cache.key(ordered_clone(module, func_name, o)))
            if known is not None:
                cyc[o] = known.simulate

    def run(batch: list[tuple[int, ...]]) -> float:
        t0 = time.monotonic()
        for o, m in zip(batch, cache.measure_all([ordered_clone(module, func_name, o) for o in batch])):
            cyc[o] = m.simulate
        return time.monotonic() - t0

    todo = [o for o in randoms if o not in cyc]
    # 3 % of the limit stay for what follows the search (the pass applies the order,
    # writes its report)
    limit = 0.97 * opts.time_limit if opts.time_limit > 0 else float("inf")
    # a batch lasts at least what the ONNX and HEFT orders' batch took (`fixed_time`)
    per_batch = fixed_time
    if opts.random_first:
        # the searched order, then the random whole orders, streamed through one
        # pool of `jobs` workers until the time limit (less, with schedule, the
        # final pipeline check's batch); what does not fit is dropped
        first = [o for o in uniq if o not in cyc]
        stream = first + todo
        deadline = t_start + limit - (1.2 * fixed_time if opts.schedule else 0.0)
        ms = cache.measure_until([ordered_clone(module, func_name, o) for o in stream], deadline)
        for o, m in zip(stream, ms):
            if m is not None:
                cyc[o] = m.simulate
        # (a searched order that did not fit is not a candidate: the time limit holds)
        k = len(todo)
        if cache.seconds:
            # a batch of `jobs` orders, one per worker, as long as the slowest of
            # the last orders compiled
            per_batch = max(per_batch, max(cache.seconds[-max(3, jobs):]))
    else:
        first = [o for o in uniq if o not in cyc]
        first += todo[: (-len(first)) % jobs]
        k = len(first) - sum(1 for o in uniq if o not in cyc)
        if first:
            per_batch = max(per_batch, run(first) / max(1, -(-len(first) // jobs)))
    rng = random.Random(opts.seed + 1)
    seen = set(cyc) | set(randoms)
    local_left = max(0, opts.local_search)
    local_done = 0
    local: set[tuple[int, ...]] = set()
    turn = 0
    recent: list[float] = []
    # a batch is taken to last 1.2x the slowest so far; with schedule, the final
    # pipeline check's unscheduled batch follows (a fresh pool and plan memo: taken
    # as 1.2x a scheduled batch)
    factor = 2.4 if opts.schedule else 1.2
    while time.monotonic() + factor * per_batch <= t_start + limit:
        best = min(cyc, key=lambda o: (cyc[o], o != onnx, o != searched))
        chunk: list[tuple[int, ...]] = []
        if (opts.random_first or turn % 2 == 0 or local_left == 0) and k < len(todo):
            chunk = todo[k:k + jobs]
            k += len(chunk)
        elif local_left > 0:
            chunk = _neighbours(best, parts, part_costs, result.dag, rng, seen, min(jobs, local_left))
            local.update(chunk)
            local_left -= len(chunk)
            local_done += len(chunk)
            if not chunk:
                local_left = 0
        turn += 1
        if not chunk:
            if k >= len(todo) and local_left == 0:
                break
            continue
        recent = (recent + [run(chunk)])[-3:]
        # the next batch is taken to last as long as the slowest of the last three
        # (the load of a shared machine changes; the first estimate stays a floor
        # until three batches have run)
        per_batch = max(recent) if len(recent) == 3 else max(per_batch, *recent)
    for nm, o in names.items():
        if o in cyc:
            result.whole[nm] = cyc[o]
    for j, o in enumerate(r for r in randoms if r in cyc):
        uniq.setdefault(o, "random" if j == 0 else f"random{j}")
        result.whole[uniq[o]] = cyc[o]
    final = min(cyc, key=lambda o: (cyc[o], o != onnx, o != searched))
    if final not in uniq:  # a local-search order (or, one subgraph, a searched one)
        uniq[final] = "local" if final in local else "search-candidate"
        result.whole[uniq[final]] = cyc[final]
    result.verified_random = sum(1 for o in whole_random if o in cyc)
    result.local_searched = local_done
    result.measured = dict(cyc)
    result.chosen = uniq[final]
    return final
