"""nnx-map: map a neuron topology onto a core mesh (docs/neuron-mapping.md).

    nnx-map INPUT -o MAP.npy --mesh WxH --capacity C [--seed S] [--trials N]
            [--report REPORT.json] [--plot FILE.png|FILE.svg] [--algorithm nnx|seed]
"""

from __future__ import annotations

import os
import sys
import time

from nnx.cli import ArgumentParser, run_tool


def _parser() -> ArgumentParser:
    p = ArgumentParser(prog="nnx-map", description="Partition a neuron topology into core-sized "
                "groups and place them on a many-core mesh (see docs/neuron-mapping.md).")
    p.add_argument("input", help="topology: nnx zip format or .npz with pre, post[, weight, size]")
    p.add_argument("-o", "--output", required=True, help="MAP.npy: int32 core (y*W+x) per neuron")
    p.add_argument("--mesh", required=True, help="core mesh WxH, e.g. 32x32")
    p.add_argument("--capacity", required=True, type=int, help="core capacity (sum of sizes)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trials", type=int, default=4, help="random trials per coarsening round "
                   "and bisection (the original uses 4-8)")
    p.add_argument("--report", help="write REPORT.json")
    p.add_argument("--plot", help="write a picture (.png or .svg) of core load and heaviest traffic")
    p.add_argument("--algorithm", choices=("nnx", "seed"), default="nnx",
                   help="'seed' = the original algorithm exactly (docs/neuron-mapping.md, "
                   "section 2); 'nnx' (default) adds the changes of docs/neuron-mapping.md, "
                   "section 7: eligible and two-hop matching, FM bisection refinement, "
                   "proportional k-group splits, fragment repair, terminal propagation, "
                   "annealing and hop-cost swaps")
    p.add_argument("--groups", type=int, help="number of groups (default: "
                   "ceil(total size / (0.97 capacity)), at most the number of cores)")
    p.add_argument("--keep-levels", metavar="DIR", help="write every coarsened topology "
                   "to DIR/level-N.zip in the nnx topology format")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv=None) -> int:
    from nnx.topology.partition import MappingError

    # ValueError: a malformed request the topology code rejects (e.g. parse_mesh)
    return run_tool("nnx-map", _run, argv, extra_user_errors=(MappingError, ValueError))


def _run(argv) -> int:
    args = _parser().parse_args(argv)
    import numpy as np

    from nnx.topology import io as tio
    from nnx.topology.mapper import PlaceOptions, evaluate, map_graph, parse_mesh
    from nnx.topology.partition import MappingError, PartitionOptions, plan_groups
    from nnx.figures import figure_format
    from nnx.topology.report import Progress, build_report, save_json, save_npy

    mesh_w, mesh_h = parse_mesh(args.mesh)
    if args.capacity <= 0:
        raise MappingError(f"--capacity must be positive (got {args.capacity})")
    if not 1 <= args.trials <= 64:
        raise MappingError(f"--trials must be in 1..64 (got {args.trials})")
    if args.plot:
        figure_format(args.plot)
    for path in (args.output, args.report, args.plot):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise MappingError(f"{path}: directory does not exist")
    if args.keep_levels and not os.path.isdir(args.keep_levels):
        raise MappingError(f"{args.keep_levels}: directory does not exist")
    if args.algorithm == "seed":
        popts = PartitionOptions.seed(trials=args.trials, groups=args.groups)
        plopts = PlaceOptions.seed(trials=args.trials)
    else:
        popts = PartitionOptions(trials=args.trials, groups=args.groups)
        plopts = PlaceOptions(trials=args.trials)
    t0 = time.perf_counter()
    g, nsyn = tio.load_graph(args.input)
    t_read = time.perf_counter() - t0
    # impossible requests fail here, before any partitioning work
    plan_groups(int(g.vsize.sum()), int(g.vsize.max(initial=0)), args.capacity,
                mesh_w * mesh_h, popts)
    progress = Progress(False if args.quiet else None)
    on_level = None
    if args.keep_levels:
        from nnx.topology.format import write_graph

        counter = [0]

        def on_level(lv):
            counter[0] += 1
            write_graph(os.path.join(args.keep_levels, f"level-{counter[0]}.zip"), lv.graph)

    res = map_graph(g, mesh_w, mesh_h, args.capacity, seed=args.seed, popts=popts,
                    plopts=plopts, progress=progress, on_level=on_level)
    times = {"read": t_read, **res.times}
    ev = evaluate(g, res.core, mesh_w, args.capacity)
    if not ev["within_capacity"]:
        raise MappingError("internal error: a core exceeds the capacity")
    save_npy(args.output, res.core.astype(np.int32))
    times["total"] = time.perf_counter() - t0
    if args.plot:
        from nnx.figures import save_figure
        from nnx.topology.plot import mapping_figure

        title = (f"{os.path.basename(args.input)} on a {mesh_w} x {mesh_h} mesh: "
                 f"{g.n:,} neurons in {len(res.loads)} groups on {ev['cores_used']} cores")
        save_figure(mapping_figure(g, res.core, mesh_w, mesh_h, args.capacity, title), args.plot)
    if args.report:
        rep = build_report(neurons=g.n, synapses=nsyn, groups=len(res.loads), evaluation=ev,
                           times=times, stats=res.stats, mesh=(mesh_w, mesh_h), seed=args.seed)
        save_json(args.report, rep)
    if not args.quiet:
        print(f"nnx-map: {g.n} neurons -> {len(res.loads)} groups on {ev['cores_used']} cores; "
              f"cut {ev['edge_cut_fraction'] * 100:.2f}% of weight, hop traffic "
              f"{ev['hop_traffic']:.6g}, max load {ev['max_core_load']}/{args.capacity}, "
              f"{times['total']:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
