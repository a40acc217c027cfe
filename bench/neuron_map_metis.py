"""Helper of bench/neuron_map.py: run pymetis k-way in its own process so that its
peak RSS is measured alone. Usage: neuron_map_metis.py GRAPH.npz K CAPACITY OUT.npy"""

import json
import resource
import sys
import time

import numpy as np


def main():
    path, k, cap, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    import pymetis

    from nnx.topology.io import load_graph

    t0 = time.perf_counter()
    g, _ = load_graph(path)
    t1 = time.perf_counter()
    # METIS takes integer edge weights: scale |w| (mean ~0.55) by 100
    ew = np.maximum(1, np.rint(g.eweight * 100)).astype(np.int64)
    xadj, adj, vw = g.indptr, g.indices, g.vsize
    del g
    total = int(vw.sum())
    # imbalance allowed so that every part fits the capacity: (1+u/1000)*total/k <= cap
    ufactor = max(1, int((cap * k / total - 1.0) * 1000))
    t2 = time.perf_counter()
    _, parts = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(xadj, adj), eweights=ew,
                                  vweights=vw, options=pymetis.Options(ufactor=ufactor, seed=1))
    t3 = time.perf_counter()
    np.save(out, np.asarray(parts, dtype=np.int32))
    print(json.dumps({"load": t1 - t0, "part_graph": t3 - t2, "total": t3 - t0,
                      "ufactor": ufactor,
                      "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


if __name__ == "__main__":
    main()
