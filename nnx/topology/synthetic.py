"""Synthetic neuron sheets for tests and benchmarks (issue 4, item 6): neurons on
a 2-D grid, a fraction of synapses local (within a radius) and the rest random."""

from __future__ import annotations

import numpy as np


def sheet_graph(n: int, m: int, *, local: float = 0.8, radius: int = 3, seed: int = 0,
                chunk: int = 1 << 23):
    """Return (pre, post, weight) of ``m`` synapses among ``n`` neurons laid out
    row-major on a ceil(sqrt(n))-wide sheet: a ``local`` fraction goes to a
    neuron within ``radius`` (Chebyshev), the rest to a uniformly random neuron.
    Weights are uniform in [0.1, 1). Generated in chunks (int32/float32 out)."""
    rng = np.random.default_rng(seed)
    side = int(np.ceil(np.sqrt(n)))
    pre = np.empty(m, dtype=np.int32)
    post = np.empty(m, dtype=np.int32)
    weight = np.empty(m, dtype=np.float32)
    for a in range(0, m, chunk):
        b = min(m, a + chunk)
        c = b - a
        p = rng.integers(0, n, size=c)
        loc = rng.random(c) < local
        x = p % side + rng.integers(-radius, radius + 1, size=c)
        y = p // side + rng.integers(-radius, radius + 1, size=c)
        x = np.clip(x, 0, side - 1)
        y = np.clip(y, 0, side - 1)
        q_local = y * side + x
        q_local = np.where(q_local >= n, n - 1 - (q_local % side), q_local)
        q = np.where(loc, q_local, rng.integers(0, n, size=c))
        pre[a:b] = p
        post[a:b] = q
        weight[a:b] = rng.uniform(0.1, 1.0, size=c)
    return pre, post, weight
