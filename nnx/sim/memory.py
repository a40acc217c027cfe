"""Memories of the simulated device: the storage unit and the three caches
(docs/architecture.md, section 9).

Each memory is a flat byte array; a `Tile` becomes a numpy view of it (typed,
reshaped, strided), created once when an instruction is decoded, so executing an
instruction touches no Python-level addressing. Views of an address range outside
the memory are refused with a `SimError`.

`occupancy_profile` turns the access log of a run into the live bytes of every cache
over time: a cache line is live from the write that fills it to the last read of that
value (the next write to it starts a new value).
"""

from __future__ import annotations

import numpy as np

from nnx.sim.isa import Tile


class SimError(Exception):
    """A run-time problem of the simulated program: `file:line: error: message`."""

    def __init__(self, msg: str, line: int = 0):
        self.msg, self.line = msg, line
        super().__init__(msg)


class Memory:
    """A byte-addressed memory (`space` is the asm address space letter)."""

    kind = "memory"

    def __init__(self, space: str, name: str, nbytes: int):
        self.space = space
        self.name = name
        self.nbytes = nbytes
        self.buf = np.zeros(nbytes, dtype=np.uint8)

    def check(self, t: Tile) -> None:
        if t.end > self.nbytes:
            raise SimError(
                f"tile {t.text()} ends at byte {t.end}, beyond the {self.name} "
                f"({self.nbytes} bytes)"
            )

    def view(self, t: Tile) -> np.ndarray:
        """A writable numpy view of the tile."""
        self.check(t)
        dt = t.np_dtype
        raw = self.buf[t.offset : t.end].view(dt)
        if t.strides is None:
            return raw.reshape(t.shape)
        return np.lib.stride_tricks.as_strided(
            raw, shape=t.shape, strides=tuple(s * dt.itemsize for s in t.strides)
        )

    def write_bytes(self, addr: int, data: bytes | np.ndarray) -> None:
        arr = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else data
        if addr + arr.size > self.nbytes:
            raise SimError(f"{arr.size} bytes at 0x{addr:x} do not fit in the {self.name} ({self.nbytes} bytes)")
        self.buf[addr : addr + arr.size] = arr


class StorageUnit(Memory):
    """The off-chip storage unit: input data, weights, results.
    Sized to the program's `.storage` (never above the target's storage.bytes)."""

    kind = "storage"

    def __init__(self, nbytes: int):
        super().__init__("S", "storage unit", nbytes)


class Cache(Memory):
    kind = "cache"


class InputNeuronCache(Cache):
    """First input cache: (processed) input neurons."""

    def __init__(self, nbytes: int):
        super().__init__("N", "neuron cache", nbytes)


class WeightCache(Cache):
    """Second input cache: (processed) weights."""

    def __init__(self, nbytes: int):
        super().__init__("W", "weight cache", nbytes)


class OutputCache(Cache):
    """Caches the operation results."""

    def __init__(self, nbytes: int):
        super().__init__("O", "output cache", nbytes)


# --------------------------------------------------------------------------------------
# Occupancy over time
# --------------------------------------------------------------------------------------

LINE_BYTES = 64


class _LineState:
    def __init__(self, nbytes: int):
        n = (nbytes + LINE_BYTES - 1) // LINE_BYTES
        self.wtime = np.full(n, -1.0)
        self.last = np.full(n, -1.0)
        self.times: list[np.ndarray] = []
        self.deltas: list[np.ndarray] = []

    def _close(self, lo: int, hi: int, start: float | None = None, end: float | None = None) -> None:
        w = self.wtime[lo:hi]
        live = w >= 0
        if not live.any():
            return
        w = w[live]
        e = self.last[lo:hi][live]
        if start is not None:
            # a value read by the instruction that overwrites it (in place) hands over
            # at the instruction's start
            e = np.where(e >= end, start, e)
        e = np.maximum(e, w)
        if w.min() == w.max() and e.min() == e.max():
            n = float(w.size * LINE_BYTES)
            self.times.append(np.array([w[0], e[0]]))
            self.deltas.append(np.array([n, -n]))
        else:
            self.times.append(np.concatenate([w, e]))
            self.deltas.append(np.concatenate([np.full(w.size, LINE_BYTES, float), np.full(e.size, -LINE_BYTES, float)]))

    def read(self, lo: int, hi: int, end: float) -> None:
        np.maximum(self.last[lo:hi], end, out=self.last[lo:hi])

    def write(self, lo: int, hi: int, start: float, end: float) -> None:
        self._close(lo, hi, start, end)
        self.wtime[lo:hi] = start
        self.last[lo:hi] = end

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        self._close(0, self.wtime.size)
        if not self.times:
            return np.zeros(0), np.zeros(0)
        t = np.concatenate(self.times)
        d = np.concatenate(self.deltas)
        return t, d


def occupancy_profile(
    log: list[tuple[float, float, tuple, tuple]],
    caches: dict[str, tuple[str, int]],
    samples: int = 200,
) -> tuple[dict[str, int], dict[str, list[float]]]:
    """Peak live bytes per cache (+ 'total') and a sampled profile.

    `log` holds (start, end, reads, writes) per executed instruction, with reads and
    writes as (space, lo_byte, hi_byte) triples; `caches` maps space -> (name, bytes).
    """
    states: dict[str, _LineState] = {}
    for start, end, reads, writes in sorted(log, key=lambda r: r[0]):
        for sp, lo, hi in reads:
            st = states.get(sp)
            if st is not None:
                st.read(lo // LINE_BYTES, (hi + LINE_BYTES - 1) // LINE_BYTES, end)
        for sp, lo, hi in writes:
            st = states.get(sp)
            if st is None:
                if sp not in caches:
                    continue
                st = states[sp] = _LineState(caches[sp][1])
            st.write(lo // LINE_BYTES, (hi + LINE_BYTES - 1) // LINE_BYTES, start, end)
    peaks: dict[str, int] = {}
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    all_t, all_d = [], []
    for sp, (name, _) in caches.items():
        st = states.get(sp)
        if st is None:
            peaks[name] = 0
            curves[name] = (np.zeros(1), np.zeros(1))
            continue
        t, d = st.finish()
        order = np.lexsort((d, t))  # frees before allocations at the same time
        t, d = t[order], d[order]
        c = np.cumsum(d)
        peaks[name] = int(c.max()) if c.size else 0
        curves[name] = (t, c)
        all_t.append(t)
        all_d.append(d)
    if all_t:
        t = np.concatenate(all_t)
        d = np.concatenate(all_d)
        order = np.lexsort((d, t))
        t, c = t[order], np.cumsum(d[order])
        peaks["total"] = int(c.max()) if c.size else 0
        curves["total"] = (t, c)
    else:
        peaks["total"] = 0
        curves["total"] = (np.zeros(1), np.zeros(1))
    t_end = max((float(tc[0][-1]) for tc in curves.values() if tc[0].size), default=0.0)
    grid = np.linspace(0.0, t_end, samples) if t_end > 0 else np.zeros(1)
    profile: dict[str, list[float]] = {"cycles": [int(x) for x in grid]}
    for name, (t, c) in curves.items():
        if t.size == 0 or c.size == 0:
            profile[name] = [0] * grid.size
            continue
        idx = np.searchsorted(t, grid, side="right") - 1
        vals = np.where(idx >= 0, c[np.clip(idx, 0, None)], 0)
        profile[name] = [int(v) for v in vals]
    return peaks, profile
