"""The layer-pipeline search of the `throughput` schedule (docs/mesh.md, "Schedules"):
contiguous layer groups and a core count per group that balance the stage times
of a stream, as SET and Tangram search them.

Pure functions over plain data. A graph is a list of `Layer`s in topological order
(the non-constant ops of @main; nnx/mesh/pipeline.py builds them with the target's
cost definitions, `graph_costs.op_unit_cycles`); a *group* is a run [a, b) of
consecutive layers that owns n cores of its own (a layer that `joins` the one
before, an elementwise op on its parts, never starts one). Every layer of a group
is split over (up to) the group's n cores, part j of each on the group's j-th
core, so the group's cores run the group's layers one after another on one input
while the next group works on the input before: a pipeline stage. With a stream
the pipeline delivers one inference per `bottleneck` cycles, the slowest stage's.

Cost model of a stage (`stage_time`), calibrated on ResNet-18 in the mesh
simulator (docs/mesh.md): its layers one after another, each taking on each of
its k parts (`layer_parts`: at most min(n, max_parts), whole rows or channels)
  its one-core cycles x the largest part's share (ceil(max_parts / k) / max_parts)
  + PART_OVERHEAD
  + for each activation operand, the bytes its part receives (a row split: its
    band, bytes x that share; a channel split or a whole layer: all of it), copied once
    into the part's input (the concatenation of received pieces: read and
    written at `dma_bytes_per_cycle`), and when the operand comes from inside
    the group, also its arrival over one link (none for a row split reading a
    row split of as many parts, whose bands lie on the same cores but for the
    halo, or a whole layer reading one on its core);
  + its piece of the result sent (a multicast, over one link) once to each
    reader in a later group;
and the values produced before the group and read after it pass through it
(`forward_skips`): each core receives, copies and sends on its 1/n of them
(`forward_cycles_per_byte`);
an operand from an earlier group (or a graph input) is sent while the stage works
on the input before (double-buffered receives), but the core receives it in
program order on a DMA queue its loads share: the bytes a core receives from
outside add RECEIVE_EXPOSED x their time over one link to the stage, and bound it
from below at that time (RECEIVE_EXPOSED = 0: the first model, the bound only).
A core holds its share of every layer's weights and the activations
live at once as its layers run one after another (memory reuse over time:
`group_memory`, which follows what the lowering keeps: pieces, the bands and
inputs it assembles, values read later in the group): a group whose cores that
does not fit (`stage_bytes` > the budget) cannot take n cores.

Skips. With a stream, a SEND of inference i waits until its destination has begun
inference i - 1 (two receive buffers). A message from group g to group g + 2 (a
residual connection around a group) thus holds g at most one inference ahead of
g + 2, where a full pipeline runs it two ahead: the stages stall one another. The
search can prefer (`skip_slack`, default SKIP_SLACK: off), within a fraction of the
least bottleneck, groups such that every layer reads only its own group's results
or the group's before; the compilation forwards such values through the groups in
between instead (nnx/mesh/pipeline.py, `forward_skips`).

The search (`best_pipeline`) minimises the bottleneck over every partition into
groups and every core count with at most `ncores` cores in all: for a bottleneck
T, `cores_for` finds by dynamic programming over the layer order the fewest cores
whose groups all take at most T (each group's least such n); the least feasible
T is found by bisection over the finitely many stage times (feasibility is
monotone in T). Exact for this cost model (test/python/test_pipeline_search.py
checks it against brute force).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: cycles a layer's part costs beyond its compute (DMA and unit latencies, message
#: heads): below a few hundred cycles of work a part does not pay for itself
PART_OVERHEAD = 200.0

#: how much slower (a fraction) a pipeline whose messages skip no stage may be than
#: the fastest and still be taken ("Skips" in the module docstring); None: never.
#: Off by default: on ResNet-18 (targets/mesh.toml, a stream of 8) the pipeline
#: without skips takes 81,937 cycles per inference, the fastest by the model 58,203
SKIP_SLACK: float | None = None

#: a follower of a channel split in its group (a bias add, a GELU after a matmul
#: split by output features) reads its operands' pieces on its own core: no
#: transfer (`on_pieces`). False: the first model, which charged it the whole
#: operand's arrival over a link as if split by channels of its own (BERT's FFN
#: GELU: 49,000 cycles of a 1.5 MB input that never moves)
FOLLOWERS_IN_PLACE = True

#: a whole layer (one part) whose operands' pieces are received in place holds each
#: operand once (`group_memory`); the split layers' received bands stay counted
#: twice (the model's margin: docs/mesh.md, "Schedules"). False: the first model,
#: which counted BERT's whole residual adds at 1.97 MB, more than any core plans
WHOLE_IN_PLACE = True

#: a layer whose operand's pieces are all received (none is its own core's piece)
#: holds that operand once when pieces are received in place (`group_memory`;
#: docs/mesh.md, "Schedules", the memory model): the lowering writes each piece
#: into the value's one buffer. True: for layers split by channels and whole
#: layers (a channel split's whole input, e.g. ResNet-50's 1x1 downsampling conv
#: of 2048 outputs reading 0.8 MB, which counted twice needed 32 cores for its
#: 8.4 MB of weights; row splits keep the second copy: docs/mesh.md, "Schedules").
#: False: the first model, every received operand counted twice (resident and
#: assembled)
RECEIVED_ONCE = True

#: the fraction of the link time of the bytes a core receives from outside its
#: group (a channel split's whole input, a row band, values forwarded) that the
#: stage waits for on top of its work (`stage_time`): the lowered core receives
#: them on a DMA queue in program order, and its first loads and the layers'
#: sends wait behind them. On ResNet-50 the simulator's busiest cores of the
#: channel-split groups took 1.3-1.5x the stage time the search planned for them
#: (their 2.6 MB of inputs: 80,000 cycles over a core's ingress link) while the
#: row-split groups waited; counted whole, the stream of 16 runs at 1.99x the MAC
#: bound against 2.18x (bench/RESULTS.md, "ResNet-50: received inputs").
#: 0.0: the first model, the received bytes' link time only a lower bound of the
#: stage (overlapped with its work)
RECEIVE_EXPOSED = 1.0

#: the spare cores go, one at a time, to the slowest stage that one more core makes
#: faster (`best_pipeline`). False: the first rule, to the slowest stage only while
#: it gains, which left 151 of 256 cores idle behind SqueezeNet's whole global pool
#: (the slowest stage, which no core makes faster) when the search's other stage
#: times were below the lowered ones
SPARE_TO_GAINING = True

#: the longest group (layers) the search considers: longer runs of layers on the
#: same cores are never faster than cutting them, and the search stays O(L x GROUP_MAX)
GROUP_MAX = 48


@dataclass(frozen=True)
class Layer:
    """One op of the graph, as the search sees it.

    cycles: its time on one core by the target's cost definitions; weight_bytes,
    in_bytes, out_bytes: its constant operands, activation operands and results;
    max_parts: the most parts it can be split into (1: whole); by_rows: split by
    output rows (activations outweigh weights), else by output channels; operands
    and joins: see below."""

    cycles: float
    weight_bytes: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    max_parts: int = 1
    by_rows: bool = False
    #: (producing layer's index, or -1 for a graph input, bytes) of each activation
    #: operand; empty: one operand of in_bytes from the layer before
    operands: tuple[tuple[int, int], ...] = ()
    #: how much more a core holds for it than the model says (raised where a
    #: lowered program overflowed its core: nnx/mesh/compile.py)
    held: float = 1.0
    #: runs piecewise on the parts of the layer before (an elementwise op, pool or
    #: batch norm after a split op): it cannot start a group
    joins: bool = False
    #: a row split whose parts read input rows beyond their own band (a kernel or
    #: stride over rows): its band is assembled from its pieces even on the cores
    #: of a producer cut alike (`group_memory`)
    halo: bool = False


@dataclass(frozen=True)
class Machine:
    """What the search knows of the mesh: cores, the bytes a core's plan may use, a
    NoC link's and a core's DMA bytes per cycle."""

    ncores: int
    budget: float
    link_bytes_per_cycle: float
    #: a core's DMA bytes per cycle (copies within its memory)
    dma_bytes_per_cycle: float = 64.0
    #: received pieces are copied into the value they make up (False: written in
    #: place, docs/mesh.md "Received pieces in place": no copy)
    concat_copy: bool = True
    #: the bytes the partitioner plans a part with (nnx/mesh/compile.py,
    #: PIPELINE_PARTITION_FILL): a channel split whose whole input and share of the
    #: weights and result fit them is an output split, every part holding the
    #: whole input; else it is cut along its input too (`group_memory`). 0: the
    #: first rule, a band whenever the input is more than half the budget
    split_budget: float = 0.0


@dataclass(frozen=True)
class Pipeline:
    """The search's answer: groups [start, end) with their core counts, the parts of
    every layer, each stage's time and the slowest (cycles per inference)."""

    groups: tuple[tuple[int, int, int], ...]
    parts: tuple[int, ...]
    stage_times: tuple[float, ...]

    @property
    def bottleneck(self) -> float:
        return max(self.stage_times)

    @property
    def cores(self) -> int:
        return sum(n for _, _, n in self.groups)


def layer_parts(layer: Layer, n: int) -> int:
    """The parts a layer of a group of n cores is split into: the fewest whose
    largest part is as small as on min(n, max_parts) parts (56 rows on 43 cores:
    28 parts of 2 rows)."""
    p = max(1, layer.max_parts)
    return -(-p // -(-p // max(1, min(n, p))))


def part_share(layer: Layer, k: int) -> float:
    """The fraction of the layer its largest of k parts holds (whole rows or
    channels: ceil(max_parts / k) of them)."""
    p = max(1, layer.max_parts)
    return -(-p // k) / p


def operands_of(layers: list[Layer], i: int) -> tuple[tuple[int, int], ...]:
    """Layer i's activation operands (producer, bytes)."""
    x = layers[i]
    return x.operands or ((i - 1, x.in_bytes),)


def operand_time(x: Layer, nbytes: int, k: int, src: Layer | None, k_src: int,
                 machine: Machine) -> tuple[float, float]:
    """(time in the stage, bytes from outside the group) of an operand of `nbytes`
    of layer x on k parts; `src`: its producer when inside the group (on k_src
    parts), else None (module docstring)."""
    got = nbytes * part_share(x, k) if x.by_rows else float(nbytes)
    copy = copy_cycles(got, machine)
    if src is None:
        return copy, got
    if k_src == k and (k == 1 or (x.by_rows and src.by_rows) or on_pieces(x)):
        return 0.0, 0.0  # on the same core, or row bands cut alike: the halo only
    if x.by_rows or k == 1:
        return got / machine.link_bytes_per_cycle + copy, 0.0
    return got * (k - 1) / k / machine.link_bytes_per_cycle + copy, 0.0


def on_pieces(x: Layer) -> bool:
    """Whether layer x runs on the channel pieces of its operands where they are
    (a follower of a channel split: `Layer.joins`, not by rows), so that an operand
    from its group, cut alike, costs no transfer (with FOLLOWERS_IN_PLACE)."""
    return FOLLOWERS_IN_PLACE and x.joins and not x.by_rows


def copy_cycles(got, machine: Machine):
    """The DMA cycles of copying `got` received bytes into the value they make up
    (read and written once), none when pieces are received in place."""
    return 2 * got / machine.dma_bytes_per_cycle if machine.concat_copy else 0 * got


def consumers(layers: list[Layer]) -> list[list[int]]:
    """The layers reading each layer's result (once per operand)."""
    out: list[list[int]] = [[] for _ in layers]
    for j in range(len(layers)):
        for p, _ in operands_of(layers, j):
            if p >= 0:
                out[p].append(j)
    return out


def stage_time(layers: list[Layer], a: int, b: int, n: int, machine: Machine) -> float:
    """Group [a, b)'s time per inference on n cores (the module docstring's model)."""
    t, outside = 0.0, 0.0
    readers = consumers(layers)
    for i in range(a, b):
        x = layers[i]
        k = layer_parts(x, n)
        t += x.cycles * part_share(x, k) + PART_OVERHEAD
        for p, nb in operands_of(layers, i):
            src = layers[p] if p >= a else None
            dt, ob = operand_time(x, nb, k, src, layer_parts(src, n) if src else 0, machine)
            t += dt
            outside += ob
        # its piece sent once (a multicast) to each later group's reader
        t += sum(1 for j in readers[i] if j >= b) * x.out_bytes * part_share(x, k) / machine.link_bytes_per_cycle
    passing = sum(layers[p].out_bytes for p in range(a) if readers[p] and max(readers[p]) >= b)
    link = outside / machine.link_bytes_per_cycle
    return max(t + passing / n * forward_cycles_per_byte(machine) + RECEIVE_EXPOSED * link, link)


def forward_cycles_per_byte(machine: Machine) -> float:
    """What forwarding a byte of a value through a group costs its cores (received
    and copied in, copied by the forwarding op, sent on: nnx/mesh/pipeline.py,
    `forward_skips`)."""
    return 3 / machine.dma_bytes_per_cycle + 1 / machine.link_bytes_per_cycle


def parts_over(layer: Layer, ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`layer_parts` and `part_share` of the layer for every group size in `ns`."""
    p = max(1, layer.max_parts)
    k = -(-p // -(-p // np.minimum(ns, p)))
    return k, -(-p // k) / p


def group_memory(layers: list[Layer], a: int, stop: int, machine: Machine, ns: np.ndarray) -> np.ndarray:
    """mem[g, m]: the bytes a core of group [a, a + g + 1) on ns[m] cores holds, for
    every group end up to `stop` (docs/mesh.md, "Schedules", the memory model):
    its share of every layer's weights (whole for a row split, 1/k for a channel
    split) plus the most activation bytes live at once while its layers run one
    after another, as the lowering's memory reuse places them by live range. At
    layer i a core holds
      its result piece (out_bytes x its share);
      for each activation operand, what it reads of it -- a band of a row split,
      the whole value otherwise -- which is *resident* (the producer's piece on
      this core, when the producer is in the group and cut alike: same parts,
      both by rows or both whole; else the received pieces) and, unless it is that
      piece itself, *assembled* once more (the concatenation of received pieces,
      or of its own piece and the halo rows a window reaches beyond it: `halo`;
      with pieces received in place, a channel split or whole layer holds an
      operand made only of received pieces once: RECEIVED_ONCE);
      a channel split whose whole input twice exceeds the budget reads a band
      (the partitioner's reduction or 2-D split cuts the input), received whole
      (with `Machine.split_budget`, an input more than half of it and no output
      split of the layer's parts within it: the range of the 2-D split the
      partitioner makes, `block_cut`);
    and every value still to be read later in the group stays resident from its
    producer (or, from outside the group, its first reader) to its last reader.
    The values forwarded through the group to later groups (`forward_skips`) are
    received and copied at its end: twice their 1/n. `Layer.held` scales a
    layer's weights and footprint."""
    L = len(layers)
    N = len(ns)
    stop = min(stop, L)
    readers = consumers(layers)
    last = [max(r) if r else -1 for r in readers]
    over = [(last[p], layers[p].out_bytes) for p in range(a) if last[p] > a]  # values passing a
    kf = [parts_over(x, ns) for x in layers[a:stop]]
    out = np.zeros((stop - a, N))
    wsum = np.zeros(N)
    peak = np.zeros(N)
    foot: list[np.ndarray] = []  # per layer of the group: its own footprint
    across: list[np.ndarray] = []  # per layer: bytes of earlier values live across it
    resident: dict[int, tuple[int, np.ndarray]] = {}  # value -> (last reader so far, bytes)
    for i in range(a, stop):
        x = layers[i]
        k, f = kf[i - a]
        split = k > 1
        h = x.held
        wsum = wsum + h * x.weight_bytes * (np.where(split, f, 1.0) if not x.by_rows else 1.0)
        piece_i = x.out_bytes * f
        fp = piece_i.copy()
        for p, nb in operands_of(layers, i):
            if x.by_rows:
                band = nb * f
            elif 2 * nb > machine.budget:  # cut along the input by the partitioner
                band = np.where(split, nb * f, float(nb))
            else:
                band = np.full(N, float(nb))
            if not x.by_rows and machine.split_budget and x.weight_bytes and 2 * nb > machine.split_budget:
                # no output split of k parts fits: a 2-D split over them (partition.plan_partition)
                cut2d = split & (nb + (x.weight_bytes + x.out_bytes) * f > machine.split_budget)
                cut = [block_cut(nb, x.weight_bytes, x.out_bytes, int(kk), machine.split_budget) if c else (1, 1)
                       for kk, c in zip(k, cut2d)]
                band = np.where(cut2d, [nb / ki for ki, _ in cut], band)
                fp = fp + np.where(cut2d, np.maximum(0.0, np.array([CHAINED_PIECES * x.out_bytes / kj
                                                                    for _, kj in cut]) - piece_i), 0.0)
            if p >= a:
                kp, fpp = kf[p - a]
                src = layers[p]
                own = (kp == k) & ((k == 1) | (x.by_rows and src.by_rows))
                res = np.where(own, src.out_bytes * fpp, band)
                extra = np.where(own, band if (x.halo and x.by_rows) else 0.0, band)
            else:
                own = np.zeros(N, dtype=bool)
                res, extra = band, band
            if RECEIVED_ONCE and not machine.concat_copy and not x.by_rows:
                extra = np.where(own, extra, 0.0)  # every piece received, in place: held once
            if WHOLE_IN_PLACE and not machine.concat_copy:  # a whole layer receives its operands' pieces in place
                extra = np.where(split, extra, 0.0)
            fp = fp + res + extra
            key = p if p >= 0 else -1 - i  # graph inputs: one value per reader
            first = p + 1 if p >= a else i + 1
            prev, held = resident.get(key, (first - 1, res if p < a else layers[p].out_bytes * kf[p - a][1]))
            for t in range(max(prev + 1, first), i):  # live across the layers in between
                across[t - a] = across[t - a] + held
                peak = np.maximum(peak, foot[t - a] + across[t - a])
            resident[key] = (i, held)
        foot.append(h * fp)
        across.append(np.zeros(N))
        peak = np.maximum(peak, foot[-1])
        fwd = 2.0 * sum(nb for r, nb in over if r >= i + 1) / ns  # forwarded through [a, i + 1)
        out[i - a] = wsum + np.maximum(peak, fwd)
    return out


#: the output pieces a part of a 2-D split plans room for (its partial sum, the
#: running sum received and their sum: reduction_splits.CHAINED_OUTPUTS)
CHAINED_PIECES = 3


def block_cut(in_bytes: float, weight_bytes: float, out_bytes: float, k: int, budget: float,
              joined: int = 2) -> tuple[int, int]:
    """(ki, kj) of the 2-D split of a layer over its k parts as the partitioner
    makes it within a pipeline group's parts (`reduction_splits.block_split` with
    `want` k and `chain_first`, `reduction_splits.pipeline_want`: the fewest input
    ranges ki whose parts, ki x floor(k / ki) of them, fit `budget` with their
    input range -- `joined` times its bytes: received pieces and their
    concatenation --, weight block and CHAINED_PIECES output pieces); (k, 1) when
    none fits."""
    for ki in range(1, k + 1):
        kj = max(1, k // ki)
        if joined * in_bytes / ki + weight_bytes / (ki * kj) + CHAINED_PIECES * out_bytes / kj <= budget:
            return ki, kj
    return k, 1


def stage_bytes(layers: list[Layer], a: int, b: int, n: int, machine: Machine) -> float:
    """The bytes a core of group [a, b) on n cores holds (`group_memory`)."""
    return float(group_memory(layers, a, b, machine, np.array([n]))[b - a - 1, 0])


def _times(layers: list[Layer], machine: Machine) -> tuple[np.ndarray, np.ndarray]:
    """time[a, b - a - 1, n - 1] and fits[...] of every group [a, b) of at most
    GROUP_MAX layers on n cores (inf where the group does not exist): `stage_time`
    and `stage_bytes` for all of them at once."""
    L, N = len(layers), machine.ncores
    G = min(GROUP_MAX, L)
    ns = np.arange(1, N + 1)
    ks, fr = zip(*(parts_over(x, ns) for x in layers)) if layers else ((), ())
    per = np.array([x.cycles * f + PART_OVERHEAD for x, f in zip(layers, fr)])
    ops = [operands_of(layers, i) for i in range(L)]
    # per operand: (producer, time inside, time outside, bytes from outside), over n
    opt = []
    for i, x in enumerate(layers):
        k = ks[i]
        row = []
        for p, nb in ops[i]:
            got = nb * fr[i] if x.by_rows else np.full(N, float(nb))
            copy = copy_cycles(got, machine)
            inside = np.zeros(N)
            if p >= 0:  # operand_time with the producer in the group
                link = machine.link_bytes_per_cycle
                same = (ks[p] == k) & ((k == 1) | (x.by_rows and layers[p].by_rows) | on_pieces(x))
                moved = got / link if x.by_rows else np.where(k > 1, got * (k - 1) / k / link, got / link)
                inside = np.where(same, 0.0, moved + copy)
            row.append((p, inside, copy, got))
        opt.append(row)
    readers = consumers(layers)
    piece = [x.out_bytes * f / machine.link_bytes_per_cycle for x, f in zip(layers, fr)]
    time = np.full((L, G, N), np.inf)
    fits = np.zeros((L, G, N), dtype=bool)
    last = [max(r) if r else -1 for r in readers]
    fwd = forward_cycles_per_byte(machine) / ns
    for a in range(L):
        if a > 0 and layers[a].joins:
            continue  # no group starts here
        over = [(last[p], layers[p].out_bytes) for p in range(a) if last[p] > a]  # values passing a
        t = np.zeros(N)
        outside = np.zeros(N)
        mem = group_memory(layers, a, a + G, machine, ns)
        for g in range(min(G, L - a)):
            i = a + g
            # layer i's piece goes to each of its readers, all after the group yet
            t = t + per[i] + len(readers[i]) * piece[i]
            for p, inside, copy, got in opt[i]:
                if p >= a:  # read inside the group now: not sent for this reader
                    t = t + inside - piece[p]
                else:
                    t = t + copy
                    outside = outside + got
            passing = sum(nb for r, nb in over if r >= i + 1)  # forwarded through [a, i + 1)
            link = outside / machine.link_bytes_per_cycle
            time[a, g] = np.maximum(t + passing * fwd + RECEIVE_EXPOSED * link, link)
            fits[a, g] = mem[g] <= machine.budget
    return time, fits


def reach(layers: list[Layer]) -> np.ndarray:
    """reach[a, g]: the earliest layer whose result a layer of group [a, a + g + 1)
    reads (graph inputs not counted; len(layers) when none)."""
    L = len(layers)
    G = min(GROUP_MAX, L)
    out = np.full((L, G), L, dtype=np.int64)
    for a in range(L):
        r = L
        for g in range(min(G, L - a)):
            r = min([r] + [p for p, _ in operands_of(layers, a + g) if p >= 0])
            out[a, g] = r
    return out


def cores_for(time: np.ndarray, fits: np.ndarray, bound: float,
              reached: np.ndarray | None = None) -> tuple[int, list[tuple[int, int, int]]] | None:
    """The fewest cores whose groups all take at most `bound` cycles and fit their
    cores, and those groups [(start, end, n)], by dynamic programming over the layer
    order (a group's least n: a channel split's gathering may make more cores
    slower, so that is not where its time first falls below the bound's
    neighbour); None when no such groups exist. With `reached` (`reach`), every
    layer reads only results of its own group or the group just before (no
    message skips a stage: module docstring, "Skips"); the state is then the last
    group, not only where it ends."""
    L, G, N = time.shape
    ok = (time <= bound) & fits
    any_ok = ok.any(axis=2)
    least = np.where(any_ok, ok.argmax(axis=2) + 1, 0)
    inf = np.iinfo(np.int64).max // 2
    if reached is None:
        best = np.full(L + 1, inf, dtype=np.int64)
        back = np.zeros(L + 1, dtype=np.int64)
        best[0] = 0
        for b in range(1, L + 1):
            for g in range(min(G, b)):
                a = b - g - 1
                if any_ok[a, g] and best[a] + least[a, g] < best[b]:
                    best[b] = best[a] + least[a, g]
                    back[b] = a
        if best[L] >= inf:
            return None
        groups, b = [], L
        while b > 0:
            a = int(back[b])
            groups.append((a, b, int(least[a, b - a - 1])))
            b = a
        return int(best[L]), groups[::-1]
    # best2[a][g]: the fewest cores of groups covering [0, a + g + 1) whose last is [a, a + g + 1)
    best2 = np.full((L, G), inf, dtype=np.int64)
    back2 = np.full((L, G), -1, dtype=np.int64)
    ending: list[list[tuple[int, int]]] = [[] for _ in range(L + 1)]  # groups ending at b: (p, cores)
    for a in range(L):
        # the groups [p, a) before, by p ascending, with running minima
        prev = sorted((p, c) for p, c in ending[a]) if a else []
        mins, arg, m, am = [], [], inf, -1
        for p, c in prev:
            if c < m:
                m, am = c, p
            mins.append(m)
            arg.append(am)
        for g in range(min(G, L - a)):
            if not any_ok[a, g]:
                continue
            if a == 0:
                cost, p_best = 0, -1
            else:
                r = reached[a, g]
                j = -1
                for t, (p, _) in enumerate(prev):  # the last predecessor starting at or before r
                    if p <= r:
                        j = t
                if j < 0 or mins[j] >= inf:
                    continue
                cost, p_best = mins[j], arg[j]
            best2[a, g] = cost + least[a, g]
            back2[a, g] = p_best
            ending[a + g + 1].append((a, int(best2[a, g])))
    finals = [(c, p) for p, c in ending[L]]
    if not finals:
        return None
    total, a = min(finals)
    groups, b = [], L
    while b > 0:
        g = b - a - 1
        groups.append((a, b, int(least[a, g])))
        b, a = a, int(back2[a, g])
    return int(total), groups[::-1]


def _least_bound(time: np.ndarray, fits: np.ndarray, ncores: int, reached: np.ndarray | None):
    """(bound, (cores, groups)) of the least candidate bound whose groups fit
    `ncores` (`cores_for`), or None."""
    cands = np.unique(time[np.isfinite(time) & fits])
    lo, hi = 0, len(cands) - 1
    found = cores_for(time, fits, cands[hi], reached) if len(cands) else None
    if found is None or found[0] > ncores:
        return None
    while lo < hi:  # the least candidate bound whose pipeline fits the cores
        mid = (lo + hi) // 2
        got = cores_for(time, fits, cands[mid], reached)
        if got is not None and got[0] <= ncores:
            hi, found = mid, got
        else:
            lo = mid + 1
    return float(cands[hi]), found


def best_pipeline(layers: list[Layer], machine: Machine, skip_slack: float | None = SKIP_SLACK) -> Pipeline:
    """The groups and core counts of least bottleneck within `machine.ncores` cores
    (the module docstring); the spare cores then go, one at a time, to the slowest
    stage that one more core makes faster (SPARE_TO_GAINING; else to the slowest
    while it gains). With `skip_slack`, the pipeline without
    skipping messages ("Skips") when its bottleneck is within 1 + skip_slack of
    the least. Raises ValueError when no layer partition fits the cores' memory."""
    time, fits = _times(layers, machine)
    free = _least_bound(time, fits, machine.ncores, None)
    if free is None:
        raise ValueError("no pipeline of the layers fits the cores")
    found = free[1]
    if skip_slack is not None:
        near = _least_bound(time, fits, machine.ncores, reach(layers))
        if near is not None and near[0] <= free[0] * (1 + skip_slack):
            found = near[1]
    groups = [list(g) for g in found[1]]
    spare = machine.ncores - found[0]
    def now(g: list[int]) -> float:
        return float(time[g[0], g[1] - g[0] - 1, g[2] - 1])

    def gains(g: list[int]) -> bool:
        a, b, n = g
        return n < machine.ncores and time[a, b - a - 1, n] < time[a, b - a - 1, n - 1] \
            and (fits[a, b - a - 1, n] or not SPARE_TO_GAINING)

    while spare > 0:  # spare cores to the slowest stage while it gains
        order = sorted(groups, key=now, reverse=True)
        g = next((g for g in order if gains(g)), None) if SPARE_TO_GAINING else order[0] if gains(order[0]) else None
        if g is None:
            break
        g[2] += 1
        spare -= 1
    parts = tuple(layer_parts(layers[i], n) for a, b, n in groups for i in range(a, b))
    times = tuple(float(time[a, b - a - 1, n - 1]) for a, b, n in groups)
    return Pipeline(tuple(tuple(g) for g in groups), parts, times)
