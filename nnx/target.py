"""The chip description: one source of truth for passes, the cost model and the simulator.

A target file (TOML, see targets/default.toml and README.md ("The accelerator"))
describes the accelerator of *Neural network operation device and method*
(docs/architecture.md, section 9) -- storage unit and DMA, instruction cache and
instruction control unit, mapping unit, input neuron cache, weight cache, operation
unit, output cache -- with the parallel unit types of *A compilation method, apparatus,
device and storage medium* (DAU memory access, MPU matrix/convolution, VPU vector) whose
counts and throughputs drive the cost model's T1 (instruction/data read time from the
port bandwidth) and T2 (compute time from unit counts and throughput); see
docs/topological-order.md, "Method", and for the formulas docs/architecture.md,
section 10.

`load_target(path=None)` returns a frozen `Target`; `None` (or "default") is the
embedded default -- the text below, identical to targets/default.toml (a test checks
it), so it works from an installed wheel. A malformed or inconsistent file raises
`TargetError` with one line naming the file, the key and the reason:

    targets/x.toml: key 'caches.weight.bytes': must be a positive integer
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Any

#: The parallel unit types (docs/architecture.md, section 9); asm unit names are these
#: plus an index: DAU0, MPU1, ...
UNIT_TYPES = ("DAU", "MPU", "VPU")
#: The mapping unit (docs/sparse-mapping.md, section 5) runs its own instruction queue
#: (MAP0, ...).
MAPPING_UNIT = "MAP"
INDEX_FORMS = ("direct", "stride")
#: asm address spaces -> cache names of the target file; "S" is the storage unit.
SPACES = {"N": "neuron", "W": "weight", "O": "output"}
CACHE_NAMES = tuple(SPACES.values())


class TargetError(ValueError):
    """A malformed or inconsistent target description (one line: file, key, reason)."""


@dataclass(frozen=True)
class StorageSpec:
    bytes: int
    dma_bytes_per_cycle: int
    dma_latency_cycles: int


@dataclass(frozen=True)
class ICacheSpec:
    bytes: int
    fetch_bytes_per_cycle: int
    instruction_bytes: int


@dataclass(frozen=True)
class CacheSpec:
    name: str
    bytes: int


@dataclass(frozen=True)
class UnitSpec:
    """One unit type. `throughput` is per instance and per cycle: bytes for DAU (the
    DMA channel bandwidth), MACs for MPU, elements for VPU, indices for MAP."""

    kind: str
    count: int
    throughput: int
    latency_cycles: int


@dataclass(frozen=True)
class MappingSpec:
    count: int
    indices_per_cycle: int
    index_forms: tuple[str, ...]
    latency_cycles: int


@dataclass(frozen=True)
class NocSpec:
    """The mesh's network-on-chip (`[mesh.noc]`, optional): dimension-ordered (XY)
    routing, `hop_latency_cycles` per router hop, `link_bytes_per_cycle` per directed
    link; timing in nnx/sim/noc.py (docs/mesh.md, "Timing model")."""

    hop_latency_cycles: int = 1
    link_bytes_per_cycle: int = 32
    routing: str = "xy"


@dataclass(frozen=True)
class OffchipSpec:
    """The off-chip memory shared by all cores of a mesh (`[mesh.offchip]`, optional).

    Every core reaches it through its own DMA (at most `storage.dma_bytes_per_cycle`
    per DAU of the core); all cores together share `bytes_per_cycle`; every transfer
    pays `latency_cycles` once. It holds the weights images (loaded into the cores'
    memories at program start) and the graph inputs and outputs. Absent keys default
    to the storage unit's DMA bandwidth and latency (one channel)."""

    bytes_per_cycle: int
    latency_cycles: int


@dataclass(frozen=True)
class MeshSpec:
    """`[mesh]`: `width` x `height` cores, each the core the rest of the target
    describes (units, caches) plus `core_memory_bytes` of local memory: the asm space
    `S` of its section of a mesh program (its weights and the activations that live
    on it)."""

    width: int
    height: int
    core_memory_bytes: int
    noc: NocSpec = NocSpec()
    offchip: OffchipSpec = OffchipSpec(64, 32)

    @property
    def cores(self) -> int:
        return self.width * self.height


@dataclass(frozen=True)
class TilingSpec:
    mpu_m: int
    mpu_n: int
    mpu_k: int
    vpu_elements: int
    element_bytes: int


@dataclass(frozen=True)
class LinearCost:
    """The cycles of one instruction of a unit: `fixed` (latency) plus `amount /
    per_cycle` (bytes, MACs, elements or indices at the unit's rate). `cycles` is what
    the simulator and the scheduler count (whole cycles); `estimate` is the same
    formula without rounding, for averages over tiles that do not exist yet (tile
    planning)."""

    fixed: int
    per_cycle: int | float

    def cycles(self, amount: int | float) -> int:
        return self.fixed + math.ceil(amount / self.per_cycle)

    def estimate(self, amount: int | float) -> float:
        return self.fixed + self.rate_cycles(amount)

    def rate_cycles(self, amount: int | float) -> float:
        """The part after the latency, unrounded."""
        return amount / self.per_cycle


@dataclass(frozen=True)
class DeviceMemorySpec:
    """The device memory that a training step's tensors live in (optional table
    `[device]`; defaults: `memory_bytes` = storage.bytes, `memory_bytes_per_cycle` =
    storage.dma_bytes_per_cycle x units.DAU.count)."""

    memory_bytes: int
    memory_bytes_per_cycle: int


HOST_LINK_DUPLEX = ("full", "half")


@dataclass(frozen=True)
class HostLinkSpec:
    """The link between device memory and host memory (optional table `[host_link]`;
    defaults: storage.dma_bytes_per_cycle, storage.dma_latency_cycles, "full").
    Full duplex: one transfer each way at a time; half duplex: one transfer at a
    time."""

    bytes_per_cycle: int
    latency_cycles: int
    duplex: str

    def transfer_cycles(self, nbytes: int) -> int:
        """Cycles of one transfer of `nbytes` over the link."""
        return LinearCost(self.latency_cycles, self.bytes_per_cycle).cycles(nbytes)


@dataclass(frozen=True)
class Target:
    name: str
    clock_hz: int
    storage: StorageSpec
    icache: ICacheSpec
    caches: tuple[CacheSpec, ...]  # neuron, weight, output
    units: tuple[UnitSpec, ...]  # DAU, MPU, VPU, MAP (MAP built from [mapping])
    mapping: MappingSpec
    mesh: MeshSpec
    tiling: TilingSpec
    device: DeviceMemorySpec
    host_link: HostLinkSpec
    source: str = "<default>"

    # ---- look-ups ----------------------------------------------------------------
    def cache(self, name_or_space: str) -> CacheSpec:
        name = SPACES.get(name_or_space, name_or_space)
        for c in self.caches:
            if c.name == name:
                return c
        raise KeyError(name_or_space)

    def cache_bytes(self, space: str) -> int:
        """Capacity of an asm address space (N, W, O; S = storage)."""
        if space == "S":
            return self.storage.bytes
        return self.cache(space).bytes

    def unit(self, kind: str) -> UnitSpec:
        for u in self.units:
            if u.kind == kind:
                return u
        raise KeyError(kind)

    def unit_names(self) -> list[str]:
        """Every unit instance, e.g. ['DAU0', 'MPU0', 'VPU0', 'MAP0']."""
        return [f"{u.kind}{i}" for u in self.units for i in range(u.count)]

    # ---- timing (the cost model; the simulator uses the same formulas) ------------
    # Every cycle count of the compiler and the simulator comes from the four linear
    # costs below: `dma_cost`, `mpu_cost`, `vpu_cost`, `map_cost` (an instruction pays
    # a fixed latency, then its amount of work at the unit's rate). `instr_cycles`
    # times whole instructions with them; tile planning (nnx/lowering/compute.py)
    # takes their fixed and per-cycle parts to time tilings before any instruction
    # exists. Nothing else reads the latencies and rates of the TOML.
    def dma_cost(self) -> "LinearCost":
        """One DMA transfer of one DAU: the unit's and the storage's latency, then
        `dma_bytes_per_cycle` bytes per cycle."""
        return LinearCost(self.unit("DAU").latency_cycles + self.storage.dma_latency_cycles,
                          self.storage.dma_bytes_per_cycle)

    def mpu_cost(self) -> "LinearCost":
        """One MPU instruction: its latency, then `throughput` MACs per cycle."""
        u = self.unit("MPU")
        return LinearCost(u.latency_cycles, u.throughput)

    def vpu_cost(self) -> "LinearCost":
        """One VPU instruction: its latency, then `throughput` elements per cycle."""
        u = self.unit("VPU")
        return LinearCost(u.latency_cycles, u.throughput)

    def map_cost(self) -> "LinearCost":
        """One mapping-unit instruction: its latency, then `indices_per_cycle`."""
        return LinearCost(self.mapping.latency_cycles, self.mapping.indices_per_cycle)

    def dma_cycles(self, nbytes: int) -> int:
        return self.dma_cost().cycles(nbytes)

    def gather_cycles(self, rows: int, row_bytes: int) -> int:
        """Indirect DMA (GATHER): one latency, then every row as its own burst (rows
        named by an index are not contiguous, so no two share a bus beat)."""
        c = self.dma_cost()
        return c.fixed + rows * math.ceil(row_bytes / c.per_cycle)

    def mpu_cycles(self, macs: int) -> int:
        return self.mpu_cost().cycles(macs)

    def vpu_cycles(self, elements: int) -> int:
        return self.vpu_cost().cycles(elements)

    def map_cycles(self, indices: int) -> int:
        return self.map_cost().cycles(indices)

    def instr_cycles(self, ins: Any, macs: int | None = None) -> int:
        """Cycles of one instruction (`nnx.sim.isa.Instr`) on its unit: the one
        definition the simulator and the list scheduler share. `macs`: the MACs an
        MPU instruction executes (default: all of them, dense)."""
        from nnx.sim.isa import dense_macs, map_indices, vpu_elements

        mn = ins.mnemonic
        ut = ins.unit_type
        if mn in ("SIGNAL", "WAIT"):
            return 0
        if ut == "DAU":
            d = ins.dsts[0]
            if mn == "GATHER":
                idx = ins.srcs[1]
                return self.gather_cycles(idx.nelems, d.nbytes // max(idx.nelems, 1))
            return self.dma_cycles(d.nbytes)
        if ut == "MAP":
            return self.map_cycles(map_indices(ins))
        if ut == "MPU":
            return self.mpu_cycles(dense_macs(ins) if macs is None else macs)
        if mn == "FILL":
            return self.vpu_cycles(ins.dsts[0].nelems)
        return self.vpu_cycles(vpu_elements(ins))

    def fetch_cycles(self, n_instructions: int) -> int:
        """T1 for the instruction stream: fetch from the instruction cache, plus one
        DMA refill from storage per instruction-cache-full of program."""
        ib = self.icache.instruction_bytes
        total = n_instructions * ib
        refills = max(1, math.ceil(total / self.icache.bytes)) if n_instructions else 0
        return refills * self.storage.dma_latency_cycles + math.ceil(
            total / min(self.icache.fetch_bytes_per_cycle, self.storage.dma_bytes_per_cycle)
        )

    def seconds(self, cycles: int | float) -> float:
        return cycles / self.clock_hz


DEFAULT_TARGET_TOML = """# nnx default target: the sparse neural-network operation device (storage unit, DMA,
# instruction cache, instruction control unit, mapping unit, input neuron cache, weight
# cache, operation unit, output cache) with parallel unit types (DAU memory access, MPU
# matrix/conv, VPU vector): docs/architecture.md, section 9. Every key is required;
# README.md ("The accelerator") documents each one. Sizes are bytes, times are cycles.

[target]
name = "nnx-default"
clock_hz = 1000000000            # 1 GHz

[storage]                        # off-chip storage unit, reached through the DMA
bytes = 4294967296               # 4 GiB
dma_bytes_per_cycle = 64         # per DMA channel (one channel per DAU instance)
dma_latency_cycles = 32          # fixed cost of every DMA transfer

[icache]                         # instruction cache + instruction control unit
bytes = 65536
fetch_bytes_per_cycle = 16
instruction_bytes = 16           # encoded size of one instruction

[caches.neuron]                  # input neuron cache   (asm space N)
bytes = 1048576
[caches.weight]                  # weight cache         (asm space W)
bytes = 1048576
[caches.output]                  # output cache         (asm space O)
bytes = 1048576

[units.DAU]                      # memory access (DMA) queues
count = 1
latency_cycles = 0               # issue cost per instruction, on top of the DMA latency
[units.MPU]                      # matrix/convolution units (the operation unit)
count = 1
macs_per_cycle = 1024
latency_cycles = 16
[units.VPU]                      # vector units (elementwise, pooling, norms, ...)
count = 1
elements_per_cycle = 64
latency_cycles = 4

[mapping]                        # the mapping unit (docs/sparse-mapping.md, section 5)
count = 1
indices_per_cycle = 64
index_forms = ["direct", "stride"]
latency_cycles = 2

[mesh]                           # the core mesh of mesh programs (docs/mesh.md)
width = 4
height = 4
core_memory_bytes = 3145728

[tiling]                         # preferred tile sizes for lower-to-chip (elements)
mpu_m = 64
mpu_n = 64
mpu_k = 64
vpu_elements = 16384
element_bytes = 4                # the element size the tile-fits-cache check assumes
"""


MESH_TARGET_TOML = """# nnx-mesh: a 16 x 16 mesh of accelerator cores joined by a network-on-chip
# (docs/mesh.md). Each core is the device the rest of this file describes (storage
# DMA, instruction cache, mapping unit, neuron/weight/output caches, DAU/MPU/VPU
# units) plus `mesh.core_memory_bytes` of local memory, the asm space S of its
# section of a mesh program. README.md ("The accelerator") documents every key.
# Sizes are bytes, times are cycles.
#
# Why these numbers: the mesh must hold, resident for the whole program, the weights
# of ResNet-18 (47 MB), MobileNetV2 (14 MB) and a 2-layer BERT of base width (about
# 150 MB, 94 MB of it the 30522 x 768 word-embedding table) plus their activations.
# 256 cores x 2 MiB = 512 MiB of core memory: BERT's weights take 29 % of it, so an
# op split over several cores still finds room for its activations and double
# buffers, and the embedding table alone spreads over at least 45 cores. A 2 MiB
# core memory is the SRAM of one Tenstorrent-class core (1-2 MB). 256 MACs/cycle per
# core give 65,536 MACs/cycle on the mesh (65 TMAC/s at 1 GHz).

[target]
name = "nnx-mesh"
clock_hz = 1000000000            # 1 GHz

[storage]                        # per core: DMA between the core memory (S) and its caches
bytes = 4294967296               # 4 GiB: also the capacity of the off-chip memory
dma_bytes_per_cycle = 64         # per DMA channel (one channel per DAU instance)
dma_latency_cycles = 8           # local SRAM: a short fixed cost per transfer

[icache]                         # per core
bytes = 16384
fetch_bytes_per_cycle = 16
instruction_bytes = 16

[caches.neuron]                  # per core: input neuron cache (asm space N)
bytes = 131072
[caches.weight]                  # per core: weight cache (asm space W)
bytes = 131072
[caches.output]                  # per core: output cache (asm space O)
bytes = 131072

[units.DAU]                      # per core: two DMA queues (NoC SEND/RECV beside local LOAD/STORE)
count = 2
latency_cycles = 0
[units.MPU]
count = 1
macs_per_cycle = 256
latency_cycles = 8
[units.VPU]
count = 1
elements_per_cycle = 32
latency_cycles = 4

[mapping]
count = 1
indices_per_cycle = 32
index_forms = ["direct", "stride"]
latency_cycles = 2

[mesh]
width = 16
height = 16
core_memory_bytes = 2097152      # 2 MiB per core, 512 MiB on the mesh

[mesh.noc]                       # XY routing; a message holds its route's links while it streams
hop_latency_cycles = 1           # per router hop
link_bytes_per_cycle = 32        # per directed link (32 GB/s at 1 GHz)
routing = "xy"

[mesh.offchip]                   # shared off-chip memory (weights, graph inputs/outputs)
bytes_per_cycle = 256            # total over all cores (256 GB/s at 1 GHz, a GDDR6/HBM class)
latency_cycles = 200             # per transfer

[tiling]                         # preferred tile sizes (elements); every cache holds 8 of each
mpu_m = 64
mpu_n = 64
mpu_k = 64
vpu_elements = 4096
element_bytes = 4
"""

#: Built-in targets: `load_target("default")`, `load_target("mesh")`.
BUILTIN_TARGETS = {"default": DEFAULT_TARGET_TOML, "mesh": MESH_TARGET_TOML}


# --------------------------------------------------------------------------------------
# Loading and validation
# --------------------------------------------------------------------------------------

_SCHEMA: dict[str, tuple[str, ...]] = {
    "target": ("name", "clock_hz"),
    "storage": ("bytes", "dma_bytes_per_cycle", "dma_latency_cycles"),
    "icache": ("bytes", "fetch_bytes_per_cycle", "instruction_bytes"),
    "mapping": ("count", "indices_per_cycle", "index_forms", "latency_cycles"),
    "mesh": ("width", "height", "core_memory_bytes"),
    "tiling": ("mpu_m", "mpu_n", "mpu_k", "vpu_elements", "element_bytes"),
}
_OPTIONAL_SCHEMA: dict[str, tuple[str, ...]] = {
    "device": ("memory_bytes", "memory_bytes_per_cycle"),
    "host_link": ("bytes_per_cycle", "latency_cycles", "duplex"),
}
"""Optional tables; a present table may omit any key (defaults: DeviceMemorySpec,
HostLinkSpec)."""
_UNIT_KEYS = {
    "DAU": ("count", "latency_cycles"),
    "MPU": ("count", "macs_per_cycle", "latency_cycles"),
    "VPU": ("count", "elements_per_cycle", "latency_cycles"),
}
_NONNEG = {"latency_cycles", "dma_latency_cycles"}


class _Reader:
    def __init__(self, source: str, data: dict[str, Any]):
        self.source = source
        self.data = data

    def fail(self, key: str, reason: str) -> TargetError:
        return TargetError(f"{self.source}: key '{key}': {reason}")

    def table(self, path: str, keys: tuple[str, ...]) -> dict[str, Any]:
        node: Any = self.data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                raise self.fail(path, "missing table")
            node = node[part]
        if not isinstance(node, dict):
            raise self.fail(path, "must be a table")
        for k in node:
            if k not in keys:
                raise self.fail(f"{path}.{k}", f"unknown key (expected one of: {', '.join(keys)})")
        for k in keys:
            if k not in node:
                raise self.fail(f"{path}.{k}", "missing key")
        return node

    def optional_table(self, path: str, keys: tuple[str, ...]) -> dict[str, Any]:
        """A table that may be absent (then {}) and may omit keys; unknown keys fail."""
        node = self.data.get(path)
        if node is None:
            return {}
        if not isinstance(node, dict):
            raise self.fail(path, "must be a table")
        for k in node:
            if k not in keys:
                raise self.fail(f"{path}.{k}", f"unknown key (expected one of: {', '.join(keys)})")
        return node

    def int_(self, table: dict[str, Any], path: str, key: str) -> int:
        v = table[key]
        nonneg = key in _NONNEG
        if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (v == 0 and not nonneg):
            kind = "a non-negative integer" if nonneg else "a positive integer"
            raise self.fail(f"{path}.{key}", f"must be {kind}, got {v!r}")
        return v


#: optional sub-tables of [mesh] and their keys (defaults in NocSpec / OffchipSpec)
_MESH_SUBTABLES = {
    "noc": ("hop_latency_cycles", "link_bytes_per_cycle", "routing"),
    "offchip": ("bytes_per_cycle", "latency_cycles"),
}
NOC_ROUTINGS = ("xy",)


def _read_mesh(r: _Reader, storage: StorageSpec) -> MeshSpec:
    """`[mesh]` with its optional `[mesh.noc]` and `[mesh.offchip]` sub-tables."""
    keys = _SCHEMA["mesh"] + tuple(_MESH_SUBTABLES)
    me = r.data.get("mesh")
    if me is None:
        raise r.fail("mesh", "missing table")
    if not isinstance(me, dict):
        raise r.fail("mesh", "must be a table")
    for k in me:
        if k not in keys:
            raise r.fail(f"mesh.{k}", f"unknown key (expected one of: {', '.join(keys)})")
    for k in _SCHEMA["mesh"]:
        if k not in me:
            raise r.fail(f"mesh.{k}", "missing key")
    width, height, core_mem = (r.int_(me, "mesh", k) for k in _SCHEMA["mesh"])
    sub: dict[str, dict[str, Any]] = {}
    for name, subkeys in _MESH_SUBTABLES.items():
        path = f"mesh.{name}"
        node = me.get(name, {})
        if not isinstance(node, dict):
            raise r.fail(path, "must be a table")
        for k in node:
            if k not in subkeys:
                raise r.fail(f"{path}.{k}", f"unknown key (expected one of: {', '.join(subkeys)})")
        sub[name] = node
    noc_t = sub["noc"]
    routing = noc_t.get("routing", NocSpec.routing)
    if routing not in NOC_ROUTINGS:
        raise r.fail("mesh.noc.routing", f"must be one of {list(NOC_ROUTINGS)}, got {routing!r}")
    noc = NocSpec(
        hop_latency_cycles=_opt_int(r, noc_t, "mesh.noc", "hop_latency_cycles", NocSpec.hop_latency_cycles, nonneg=True),
        link_bytes_per_cycle=_opt_int(r, noc_t, "mesh.noc", "link_bytes_per_cycle", NocSpec.link_bytes_per_cycle),
        routing=routing,
    )
    off_t = sub["offchip"]
    offchip = OffchipSpec(
        bytes_per_cycle=_opt_int(r, off_t, "mesh.offchip", "bytes_per_cycle", storage.dma_bytes_per_cycle),
        latency_cycles=_opt_int(r, off_t, "mesh.offchip", "latency_cycles", storage.dma_latency_cycles, nonneg=True),
    )
    return MeshSpec(width, height, core_mem, noc, offchip)


def _opt_int(r: _Reader, table: dict[str, Any], path: str, key: str, default: int, nonneg: bool = False) -> int:
    """An optional integer key: `default` when absent, else validated like the others."""
    if key not in table:
        return default
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (v == 0 and not nonneg):
        kind = "a non-negative integer" if nonneg else "a positive integer"
        raise r.fail(f"{path}.{key}", f"must be {kind}, got {v!r}")
    return v


def _check_top(r: _Reader) -> None:
    known = set(_SCHEMA) | set(_OPTIONAL_SCHEMA) | {"caches", "units"}
    for k in r.data:
        if k not in known:
            raise r.fail(k, f"unknown table (expected one of: {', '.join(sorted(known))})")


def target_from_dict(data: dict[str, Any], source: str = "<dict>") -> Target:
    r = _Reader(source, data)
    _check_top(r)
    t = r.table("target", _SCHEMA["target"])
    if not isinstance(t["name"], str) or not t["name"]:
        raise r.fail("target.name", "must be a non-empty string")
    clock = r.int_(t, "target", "clock_hz")
    s = r.table("storage", _SCHEMA["storage"])
    storage = StorageSpec(*(r.int_(s, "storage", k) for k in _SCHEMA["storage"]))
    ic = r.table("icache", _SCHEMA["icache"])
    icache = ICacheSpec(*(r.int_(ic, "icache", k) for k in _SCHEMA["icache"]))
    if icache.instruction_bytes > icache.bytes:
        raise r.fail("icache.bytes", "smaller than one instruction (icache.instruction_bytes)")

    cs = r.table("caches", CACHE_NAMES)
    caches = []
    for name in CACHE_NAMES:
        c = r.table(f"caches.{name}", ("bytes",))
        caches.append(CacheSpec(name, r.int_(c, f"caches.{name}", "bytes")))
    del cs

    us = r.table("units", UNIT_TYPES)
    units = []
    for kind in UNIT_TYPES:
        path = f"units.{kind}"
        u = r.table(path, _UNIT_KEYS[kind])
        count = r.int_(u, path, "count")
        lat = r.int_(u, path, "latency_cycles")
        if kind == "DAU":
            thr = storage.dma_bytes_per_cycle
        else:
            thr = r.int_(u, path, _UNIT_KEYS[kind][1])
        units.append(UnitSpec(kind, count, thr, lat))
    del us

    m = r.table("mapping", _SCHEMA["mapping"])
    forms = m["index_forms"]
    if (
        not isinstance(forms, list)
        or not forms
        or any(f not in INDEX_FORMS for f in forms)
        or len(set(forms)) != len(forms)
    ):
        raise r.fail(
            "mapping.index_forms",
            f"must be a non-empty list of distinct index forms from {list(INDEX_FORMS)}, got {forms!r}",
        )
    mapping = MappingSpec(
        r.int_(m, "mapping", "count"),
        r.int_(m, "mapping", "indices_per_cycle"),
        tuple(forms),
        r.int_(m, "mapping", "latency_cycles"),
    )
    units.append(UnitSpec(MAPPING_UNIT, mapping.count, mapping.indices_per_cycle, mapping.latency_cycles))

    mesh = _read_mesh(r, storage)
    ti = r.table("tiling", _SCHEMA["tiling"])
    tiling = TilingSpec(*(r.int_(ti, "tiling", k) for k in _SCHEMA["tiling"]))

    dv = r.optional_table("device", _OPTIONAL_SCHEMA["device"])
    device = DeviceMemorySpec(
        r.int_(dv, "device", "memory_bytes") if "memory_bytes" in dv else storage.bytes,
        r.int_(dv, "device", "memory_bytes_per_cycle") if "memory_bytes_per_cycle" in dv
        else storage.dma_bytes_per_cycle * units[0].count,
    )
    hl = r.optional_table("host_link", _OPTIONAL_SCHEMA["host_link"])
    duplex = hl.get("duplex", "full")
    if duplex not in HOST_LINK_DUPLEX:
        raise r.fail("host_link.duplex", f"must be one of {list(HOST_LINK_DUPLEX)}, got {duplex!r}")
    host_link = HostLinkSpec(
        r.int_(hl, "host_link", "bytes_per_cycle") if "bytes_per_cycle" in hl
        else storage.dma_bytes_per_cycle,
        r.int_(hl, "host_link", "latency_cycles") if "latency_cycles" in hl
        else storage.dma_latency_cycles,
        duplex,
    )

    # ---- consistency ----------------------------------------------------------------
    eb = tiling.element_bytes
    need = {
        "neuron": ("tiling.mpu_m x tiling.mpu_k", tiling.mpu_m * tiling.mpu_k * eb),
        "weight": ("tiling.mpu_k x tiling.mpu_n", tiling.mpu_k * tiling.mpu_n * eb),
        "output": ("tiling.mpu_m x tiling.mpu_n", tiling.mpu_m * tiling.mpu_n * eb),
    }
    for c in caches:
        what, nbytes = need[c.name]
        if c.bytes < nbytes:
            raise r.fail(
                f"caches.{c.name}.bytes",
                f"{c.bytes} bytes is smaller than one MPU tile ({what} elements = {nbytes} bytes)",
            )
        if c.bytes < tiling.vpu_elements * eb:
            raise r.fail(
                f"caches.{c.name}.bytes",
                f"{c.bytes} bytes is smaller than one VPU tile (tiling.vpu_elements = "
                f"{tiling.vpu_elements * eb} bytes)",
            )
        if c.bytes > storage.bytes:
            raise r.fail(f"caches.{c.name}.bytes", "larger than the storage unit (storage.bytes)")
    if mesh.core_memory_bytes < sum(c.bytes for c in caches):
        raise r.fail(
            "mesh.core_memory_bytes",
            "smaller than the sum of the caches of one core (caches.*.bytes)",
        )
    return Target(
        name=t["name"],
        clock_hz=clock,
        storage=storage,
        icache=icache,
        caches=tuple(caches),
        units=tuple(units),
        mapping=mapping,
        mesh=mesh,
        tiling=tiling,
        device=device,
        host_link=host_link,
        source=source,
    )


def parse_target(text: str, source: str = "<string>") -> Target:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TargetError(f"{source}: malformed TOML: {e}") from None
    return target_from_dict(data, source)


_BUILTIN: dict[str, Target] = {}


def load_target(path: str | None = None) -> Target:
    """The target described by the TOML file `path`; None or "default": the embedded
    default (targets/default.toml); "mesh": the embedded 16 x 16 mesh
    (targets/mesh.toml)."""
    name = "default" if path is None else path
    if name in BUILTIN_TARGETS:
        if name not in _BUILTIN:
            _BUILTIN[name] = parse_target(BUILTIN_TARGETS[name], f"<{name}>")
        return _BUILTIN[name]
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TargetError(f"{path}: cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TargetError(f"{path}: not a UTF-8 text file") from None
    return parse_target(text, path)


def builtin_target_named(name: str) -> Target | None:
    """The built-in target whose `target.name` is `name` (e.g. "nnx-mesh"), or None."""
    for key in BUILTIN_TARGETS:
        t = load_target(key)
        if t.name == name:
            return t
    return None


def load_pass_target(pass_name: str, path: str) -> "Target":
    """The target of a pass's `target` option ("" = the embedded default); a bad or
    unreadable file is a PassError naming the pass."""
    from nnx.diagnostics import PassError

    try:
        return load_target(path or None)
    except TargetError as e:
        raise PassError(f"{pass_name}: {e}") from None
    except OSError as e:
        raise PassError(f"{pass_name}: cannot read target '{path}': {e.strerror}") from None
