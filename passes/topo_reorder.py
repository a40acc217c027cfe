"""`topo-reorder`: pick the topological order of @main's ops that runs fastest on the
target's parallel units (docs/topological-order.md).

The op graph is cut at its key nodes (the nodes on every input-to-output path) into
subgraphs that run one after another; each subgraph's orders are searched (all of
them when there are at most `max-orders`, else the ONNX order, HEFT's, random ones
and a beam search), costed, and the best ones concatenated. With `verify=true` (the
default) the result is compared, as a whole compiled model, with the ONNX order, the
HEFT order and the best of `baseline-random` random orders: the fewest simulated
cycles win and ties keep the ONNX order, so the pass never makes a model slower than
those. Chain-shaped graphs (a single order) are left untouched.

Options:

* `search`   auto (default) | all | random | beam | heft | onnx: which candidates;
* `cost`     simulate (default: the subgraph compiled alone and replayed on the units)
             | model (T1 fetch + data read, T2 busiest compute unit, waits ignored)
             | estimate (graph level, no compilation);
* `max-orders=N` (64) enumerate when a subgraph has at most N orders, else N random;
* `merge-below=K` (3) subgraphs with fewer than K ops join the preceding one;
* `seed=S` (0) for the random orders; `shortlist=M` (3) candidates per subgraph
  always compiled (the best by estimate); `budget=T` (10) seconds of per-subgraph
  compilation, shared by size, for more candidates (HEFT's, the beam's, the random
  whole orders' parts, then by estimate; small subgraphs: all their orders);
  `baseline-random=R` (20) random whole orders drawn, of which the whole-model check
  compiles up to `verify-random=V` (20) while `time-limit=S` (30; 0 = none) seconds
  of the whole search last (the ONNX and HEFT orders are always compiled), then a
  local search of up to `local-search=L` (200) whole orders around the best one
  measured (subgraph alternatives in the whole-model context, random op moves):
  never slower than any order compiled, the best of the R among them when they fit;
* `random-first` (true) the random whole orders are compiled right after the ONNX
  and HEFT orders, before the per-subgraph search, when all of them fit in the time
  limit (else after it, best composed per-subgraph cost first), and before the
  local search (false: after the searched order, alternating with the local search
  batch by batch, the earlier behaviour);
* `timing` direct (default: a candidate's lowering timed without building chip IR,
  MPU tile plans memoized across candidates; the same cycles as `lower-to-chip` +
  the simulator's timing, so more candidates fit the time limit) | ir (every
  candidate through `lower-to-chip` on chip IR, the original method);
* `schedule` (true) the `lower-to-chip` option the measurements compile with;
  `target` the target TOML; `jobs` compile processes (0 = the cores, at most 4);
* `report="r.json"`, `dot="g.dot"`, `gantt="g.png"` or `"g.svg"` (also `g.onnx.png`,
  before; docs/pictures.md).

    nnx-opt m.mlir -p 'topo-reorder{cost=simulate max-orders=64 report="r.json"},lower-to-chip'
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from nnx.diagnostics import PassError


@dataclass(frozen=True)
class TopoReorderPass(ModulePass):
    """Search the order of @main's ops for the target's parallel units (module docstring)."""

    name = "topo-reorder"

    search: str = "auto"
    cost: str = "simulate"
    max_orders: int = 64
    merge_below: int = 3
    seed: int = 0
    shortlist: int = 3
    budget: int | float = 10
    time_limit: int | float = 30
    baseline_random: int = 20
    verify_random: int = 20
    local_search: int = 200
    verify: bool = True
    schedule: bool = True
    target: str = ""
    jobs: int = 0
    report: str = ""
    dot: str = ""
    gantt: str = ""
    remarks: bool = False
    timing: str = "direct"
    random_first: bool = True

    def _check(self) -> None:
        from nnx.topo_order.cost import COSTS
        from nnx.topo_order.search import SEARCHES, TIMINGS

        if self.timing not in TIMINGS:
            raise PassError(f"topo-reorder: timing={self.timing!r}: expected one of {', '.join(TIMINGS)}")
        if self.search not in SEARCHES:
            raise PassError(f"topo-reorder: search={self.search!r}: expected one of {', '.join(SEARCHES)}")
        if self.cost not in COSTS:
            raise PassError(f"topo-reorder: cost={self.cost!r}: expected one of {', '.join(COSTS)}")
        if self.gantt and not self.gantt.lower().endswith((".png", ".svg")):
            raise PassError(f"topo-reorder: gantt={self.gantt!r}: the file name must end in .png or .svg")
        for nm, v, lo in (("budget", self.budget, 0), ("time-limit", self.time_limit, 0),
                          ("max-orders", self.max_orders, 1), ("merge-below", self.merge_below, 1),
                          ("shortlist", self.shortlist, 0), ("baseline-random", self.baseline_random, 0),
                          ("verify-random", self.verify_random, 0), ("local-search", self.local_search, 0),
                          ("jobs", self.jobs, 0)):
            if v < lo:
                raise PassError(f"topo-reorder: {nm}={v}: must be at least {lo}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from nnx.target import load_pass_target
        from nnx.topo_order import report as R
        from nnx.topo_order.compile_cache import default_jobs
        from nnx.topo_order.dag import build_dag
        from nnx.topo_order.extract import apply_order
        from nnx.topo_order.search import SearchOptions, search_order

        self._check()
        target = load_pass_target("topo-reorder", self.target)
        funcs = [o for o in op.body.block.ops if isinstance(o, func.FuncOp)]
        main = next((f for f in funcs if f.sym_name.data == "main"), funcs[0] if len(funcs) == 1 else None)
        if main is None:
            raise PassError("topo-reorder: expected a func.func @main")
        opts = SearchOptions(
            search=self.search, cost=self.cost, max_orders=self.max_orders,
            merge_below=self.merge_below, seed=self.seed, shortlist=self.shortlist,
            budget=float(self.budget), time_limit=float(self.time_limit),
            baseline_random=self.baseline_random, verify_random=self.verify_random,
            local_search=self.local_search,
            verify=self.verify, schedule=self.schedule,
            target_path=self.target, jobs=self.jobs or default_jobs(), timing=self.timing,
            random_first=self.random_first,
        )
        try:
            result = search_order(op, main.sym_name.data, opts, target)
        except PassError:
            raise
        except Exception as e:  # noqa: BLE001 - a lowering failure while measuring
            msg = (str(e).strip() or type(e).__name__).splitlines()[0]
            raise PassError(f"topo-reorder: cannot measure an order: {msg}") from None
        block = main.body.block
        dag = build_dag(block)
        if self.gantt:
            self._gantt(op, main.sym_name.data, result, target)
        try:
            if self.report:
                R.write_report(self.report, result)
            if self.dot:
                R.write_dot(self.dot, result)
        except OSError as e:
            raise PassError(f"topo-reorder: cannot write '{e.filename}': {e.strerror}") from None
        apply_order(block, dag, result.order)
        if self.remarks:
            for k, s in enumerate(result.subgraphs):
                print(f"remark: topo-reorder: subgraph {k}: {len(s.nodes)} ops, orders "
                      f"{s.orders_total}, tried {len(s.tried)}, best cost {s.best_cost}, "
                      f"{s.seconds:.2f} s", file=sys.stderr)
            print(f"remark: topo-reorder: chose the {result.chosen} order "
                  f"({result.whole or 'unchanged'}; {result.verified_random} random and "
                  f"{result.local_searched} local-search whole orders compiled) in {result.seconds:.1f} s",
                  file=sys.stderr)

    def _gantt(self, module: ModuleOp, func_name: str, result, target) -> None:
        """Gantt PNGs of the chosen and the ONNX order: each subgraph compiled alone,
        subgraphs back to back."""
        from nnx.topo_order import report as R
        from nnx.sim.timing import replay
        from nnx.topo_order.cost import compile_instrs
        from nnx.topo_order.extract import extract_function

        dag = result.dag
        pos = {v: k for k, v in enumerate(result.order)}
        root, ext = os.path.splitext(self.gantt)
        for path, key in ((self.gantt, lambda v: pos[v]), (f"{root}.onnx{ext or '.png'}", lambda v: v)):
            timelines, offset = [], 0
            for part in result.parts:
                order = sorted(part, key=key)
                r = replay(compile_instrs(extract_function(dag, order), self.target, self.schedule),
                           target, record=True)
                timelines.append([(u, s + offset, e + offset, i) for u, s, e, i in r.intervals])
                offset += r.cycles
            try:
                which = "chosen" if path == self.gantt else "ONNX"
                R.write_gantt(path, timelines, target.unit_names(),
                              title=f"@{func_name} on {target.name}: {which} order, {offset:,} cycles")
            except OSError as e:
                raise PassError(f"topo-reorder: cannot write '{path}': {e.strerror}") from None
