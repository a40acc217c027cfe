"""nnx-topo: convert and inspect neuron topology files (the format of docs/neuron-mapping.md).

    nnx-topo convert IN OUT     .npz edge list <-> nnx topology zip (by OUT's suffix)
    nnx-topo info FILE          counts, sizes and weight totals
"""

from __future__ import annotations

import json
import sys

from nnx.cli import ArgumentParser, UsageError, run_tool


def main(argv=None) -> int:
    # ValueError: malformed edge lists rejected by nnx.topology.io
    return run_tool("nnx-topo", _main, argv, extra_user_errors=(ValueError,))


def _main(argv: list[str]) -> int:
    p = ArgumentParser(prog="nnx-topo", description="Convert and inspect neuron topologies.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=ArgumentParser)
    c = sub.add_parser("convert", help="IN (.npz or zip) -> OUT (.npz or zip, by suffix)")
    c.add_argument("input")
    c.add_argument("output")
    c.add_argument("--vertices-per-member", type=int, default=65536,
                   help="vertices per zip member (1 = the original's one member per vertex, "
                   "docs/neuron-mapping.md section 7)")
    c.add_argument("--level", type=int, default=1, help="deflate level 0-9 (default 1)")
    i = sub.add_parser("info", help="print counts and totals as JSON")
    i.add_argument("file")
    args = p.parse_args(argv)
    if args.cmd == "info":
        from nnx.topology.format import info
        from nnx.topology.io import is_topology_zip, load_graph

        if is_topology_zip(args.file):
            d = info(args.file)
        else:
            g, nsyn = load_graph(args.file)
            d = {"vertices": g.n, "synapses": nsyn, "undirected_edges": g.nnz // 2,
                 "total_vertex_size": int(g.vsize.sum()),
                 "max_vertex_size": int(g.vsize.max(initial=0)),
                 "total_edge_weight": g.total_edge_weight()}
        print(json.dumps(d, indent=2))
        return 0
    import numpy as np

    from nnx.atomic_file import atomic_open
    from nnx.topology.format import write_synapses
    from nnx.topology.io import load_synapses

    if not 1 <= args.vertices_per_member or not 0 <= args.level <= 9:
        raise UsageError("--vertices-per-member must be >= 1 and --level in 0..9")
    pre, post, w, size, n = load_synapses(args.input)
    if args.output.endswith(".npz"):
        with atomic_open(args.output, "wb") as f:
            np.savez_compressed(f, pre=pre, post=post, weight=w, size=size)
    else:
        write_synapses(args.output, pre, post, w, size, n=n,
                       vertices_per_member=args.vertices_per_member,
                       compresslevel=args.level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
