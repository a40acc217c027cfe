"""On-disk topology format (step S1 of the original; docs/neuron-mapping.md,
section 3.1 "Topology file format").

A topology file is a deflate-compressed zip archive:

``topology.json``
    small JSON header: ``{"format": "nnx-topology", "version": 1, "vertices": N,
    "records": R, "synapses": S, "weight_encoding": "int" | "f32bits",
    "members": M}``.
``v/00000000``, ``v/00000001``, ... (M members, in order)
    concatenated *vertex records* for consecutive vertices. Every integer is an
    unsigned varint (LEB128: 7 data bits per byte, low group first, high bit set
    = more bytes follow). A vertex record is::

        vertex id, vertex size, vertex weight, edge count E,
        E x (flag, other vertex, edge size, edge weight)

    ``flag`` bit 0 (1): the edge is a synapse from this vertex to ``other``;
    bit 1 (2): a synapse from ``other`` to this vertex; 3: an undirected edge
    of an intermediate (coarsened) topology. Every edge is stored under both of
    its ends, so a reader sees each vertex's full adjacency in one place and
    can build CSR rows in a single streaming pass.
    ``vertex weight`` is the number of original neurons merged into the vertex
    (1 in an input topology). ``edge size`` is a per-edge payload (1 unless the
    producer says otherwise); the partitioner uses ``edge weight``.
    ``edge weight`` is the varint of the integer weight when ``weight_encoding``
    is ``int``, or of the IEEE-754 float32 bit pattern when it is ``f32bits``
    (lossless for non-integer weights).

Departure from the original, which writes one member file per vertex. With a
million vertices that is a million zip members (a 60+ MB central directory and
one zlib stream per vertex); measured (docs/neuron-mapping.md, section 7, "File format"),
it is several times slower to write and read than grouping consecutive vertices into
members of at most ``vertices_per_member`` vertices / ``records_per_member`` edge records.
``vertices_per_member=1`` gives the original's one-member-per-vertex layout, and
the reader accepts both.

Hostile input: member names must be exactly the ones above (no paths), the
header is at most 64 KiB, every member's declared size is checked against its
compressed size (deflate cannot exceed ~1032:1, so larger claims are a zip
bomb), all counts in the header are checked against what the declared bytes
can hold before anything is allocated, and decoding is streamed in 1 MiB
chunks; a count, id or varint that disagrees with the header is rejected with
a :class:`TopologyFormatError` naming the member and byte offset.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from typing import Iterator

import numba as nb
import numpy as np

from nnx.atomic_file import atomic_path

from .graph import Graph, merge_duplicates, _trim

HEADER = "topology.json"
MEMBER_RE = re.compile(r"^v/(\d{8})$")
MAX_HEADER = 64 * 1024
MAX_RATIO = 1100  # deflate's theoretical maximum is ~1032:1
CHUNK = 1 << 20
FLAG_OUT, FLAG_IN, FLAG_UNDIRECTED = 1, 2, 3


class TopologyFormatError(ValueError):
    """A topology file is malformed, truncated or hostile."""


# ---------------------------------------------------------------- varints


@nb.njit(cache=True)
def _put(buf, p, x):
    while x >= 0x80:
        buf[p] = np.uint8((x & 0x7F) | 0x80)
        x >>= 7
        p += 1
    buf[p] = np.uint8(x)
    return p + 1


@nb.njit(cache=True)
def encode_varints(values):
    """Encode unsigned integers (uint64) as concatenated varints."""
    buf = np.empty(values.shape[0] * 10, dtype=np.uint8)
    p = 0
    for i in range(values.shape[0]):
        p = _put(buf, p, np.uint64(values[i]))
    return buf[:p]


@nb.njit(cache=True)
def decode_varints(buf, n, out):
    """Decode the complete varints of buf[:n] into out.

    Returns (count, consumed_bytes, error): error is 1 when a varint is longer
    than 10 bytes (more than 64 bits). A trailing incomplete varint is left
    unconsumed for the next chunk.
    """
    cnt = 0
    i = 0
    start = 0
    while i < n:
        x = np.uint64(0)
        shift = 0
        start = i
        done = False
        while i < n:
            b = buf[i]
            i += 1
            if shift >= 64 or (shift == 63 and (b & 0x7F) > 1):
                return cnt, start, 1
            x |= np.uint64(b & 0x7F) << np.uint64(shift)
            shift += 7
            if b < 0x80:
                done = True
                break
        if not done:
            return cnt, start, 0
        out[cnt] = x
        cnt += 1
    return cnt, n, 0


def varint_encode(values) -> bytes:
    return encode_varints(np.asarray(values, dtype=np.uint64)).tobytes()


def varint_decode(data: bytes) -> list[int]:
    buf = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(data), dtype=np.uint64)
    cnt, used, err = decode_varints(buf, len(data), out)
    if err or used != len(data):
        raise TopologyFormatError("bad varint stream")
    return [int(x) for x in out[:cnt]]


# ---------------------------------------------------------------- writer


def _weight_codes(w: np.ndarray, encoding: str) -> np.ndarray:
    if encoding == "int":
        return np.rint(w).astype(np.uint64)
    return np.abs(w).astype(np.float32).view(np.uint32).astype(np.uint64)


def _choose_encoding(w: np.ndarray) -> str:
    w = np.abs(w)
    if w.size == 0 or (np.all(w == np.rint(w)) and w.max() < 2**53):
        return "int"
    return "f32bits"


def _member_bounds(indptr: np.ndarray, vpm: int, rpm: int) -> list[tuple[int, int]]:
    n = indptr.shape[0] - 1
    out = []
    v = 0
    while v < n:
        hi = min(n, v + vpm)
        # shrink so that the member has at most rpm records (at least one vertex)
        lim = indptr[v] + rpm
        j = int(np.searchsorted(indptr[v + 1 : hi + 1], lim, side="right"))
        hi2 = v + max(1, j)
        out.append((v, min(hi, hi2)))
        v = min(hi, hi2)
    return out


def _write_rows(
    path: str,
    indptr: np.ndarray,
    other: np.ndarray,
    flag: np.ndarray,
    esize: np.ndarray,
    weight: np.ndarray,
    vsize: np.ndarray,
    vweight: np.ndarray,
    synapses: int,
    vertices_per_member: int,
    records_per_member: int,
    compresslevel: int,
    progress=None,
) -> None:
    n = indptr.shape[0] - 1
    enc = _choose_encoding(weight)
    bounds = _member_bounds(indptr, vertices_per_member, records_per_member)
    header = {
        "format": "nnx-topology",
        "version": 1,
        "vertices": int(n),
        "records": int(indptr[-1]),
        "synapses": int(synapses),
        "weight_encoding": enc,
        "members": len(bounds),
    }
    with atomic_path(path) as tmp:
        with zipfile.ZipFile(
            tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=compresslevel, allowZip64=True
        ) as zf:
            zf.writestr(HEADER, json.dumps(header))
            for i, (v0, v1) in enumerate(bounds):
                a, b = int(indptr[v0]), int(indptr[v1])
                ip = indptr[v0 : v1 + 1] - a
                codes = _weight_codes(weight[a:b], enc)
                buf = np.empty((b - a) * 40 + (v1 - v0) * 40 + 16, dtype=np.uint8)
                m = _encode_rows(v0, v1, ip, other[a:b], flag[a:b], esize[a:b], codes,
                                 vsize[v0:v1], vweight[v0:v1], buf)
                zf.writestr(f"v/{i:08d}", buf[:m].tobytes())
                if progress is not None:
                    progress(v1, n)


@nb.njit(cache=True)
def _encode_rows(v0, v1, indptr, other, flag, esize, wcode, vsize, vweight, buf):
    p = 0
    for i in range(v1 - v0):
        p = _put(buf, p, np.uint64(v0 + i))
        p = _put(buf, p, np.uint64(vsize[i]))
        p = _put(buf, p, np.uint64(vweight[i]))
        p = _put(buf, p, np.uint64(indptr[i + 1] - indptr[i]))
        for j in range(indptr[i], indptr[i + 1]):
            p = _put(buf, p, np.uint64(flag[j]))
            p = _put(buf, p, np.uint64(other[j]))
            p = _put(buf, p, np.uint64(esize[j]))
            p = _put(buf, p, np.uint64(wcode[j]))
    return p


@nb.njit(cache=True)
def _group_synapses(pre, post, n):
    deg = np.zeros(n + 1, dtype=np.int64)
    for i in range(pre.shape[0]):
        deg[pre[i] + 1] += 1
        deg[post[i] + 1] += 1
    for i in range(n):
        deg[i + 1] += deg[i]
    pos = deg[:-1].copy()
    m = deg[n]
    other = np.empty(m, dtype=np.int32)
    flag = np.empty(m, dtype=np.uint8)
    src = np.empty(m, dtype=np.int64)
    for i in range(pre.shape[0]):
        a = pre[i]
        b = post[i]
        other[pos[a]] = b
        flag[pos[a]] = 1
        src[pos[a]] = i
        pos[a] += 1
        other[pos[b]] = a
        flag[pos[b]] = 2
        src[pos[b]] = i
        pos[b] += 1
    return deg, other, flag, src


def write_synapses(
    path: str,
    pre: np.ndarray,
    post: np.ndarray,
    weight: np.ndarray | None = None,
    size: np.ndarray | None = None,
    n: int | None = None,
    esize: np.ndarray | None = None,
    vertices_per_member: int = 65536,
    records_per_member: int = 1 << 21,
    compresslevel: int = 1,
) -> None:
    """Write a directed synapse list (pre -> post) in the topology zip format.

    Each synapse is stored under both ends (flag 1 at ``pre``, flag 2 at
    ``post``) so that adjacency is grouped per vertex.
    """
    pre = np.asarray(pre, dtype=np.int64)
    post = np.asarray(post, dtype=np.int64)
    if n is None:
        n = int(max(pre.max(initial=-1), post.max(initial=-1)) + 1)
        if size is not None:
            n = max(n, len(size))
    if weight is None:
        weight = np.ones(pre.shape[0], dtype=np.float32)
    weight = np.abs(np.asarray(weight))
    indptr, other, flag, src = _group_synapses(pre, post, n)
    w = weight[src]
    es = np.ones(src.shape[0], dtype=np.int64) if esize is None else np.asarray(esize)[src]
    del src
    vsize = np.ones(n, dtype=np.int64) if size is None else np.asarray(size, dtype=np.int64)
    _write_rows(path, indptr, other, flag, es, w, vsize, np.ones(n, dtype=np.int64),
                pre.shape[0], vertices_per_member, records_per_member, compresslevel)


def write_graph(
    path: str,
    g: Graph,
    vertices_per_member: int = 65536,
    records_per_member: int = 1 << 21,
    compresslevel: int = 1,
) -> None:
    """Write an (intermediate, undirected) topology: every edge gets flag 3.

    As in the original, the topologies produced by later steps are saved in the
    same format as the input.
    """
    nnz = g.nnz
    flag = np.full(nnz, FLAG_UNDIRECTED, dtype=np.uint8)
    es = np.ones(nnz, dtype=np.uint8)
    _write_rows(path, g.indptr, g.indices[:nnz], flag, es, g.eweight[:nnz], g.vsize, g.vcount,
                nnz // 2, vertices_per_member, records_per_member, compresslevel)


# ---------------------------------------------------------------- reader


def _fail(path, msg):
    raise TopologyFormatError(f"{path}: {msg}")


class _Archive:
    """Validated view of a topology zip (header + ordered member list)."""

    def __init__(self, path: str):
        self.path = path
        try:
            self.zf = zipfile.ZipFile(path, "r")
        except (zipfile.BadZipFile, OSError) as e:
            _fail(path, f"not a topology zip file ({e})")
        try:
            self._validate()
        except BaseException:
            self.zf.close()
            raise

    def close(self):
        self.zf.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _validate(self):
        path = self.path
        infos = self.zf.infolist()
        names = {}
        header = None
        for zi in infos:
            name = zi.filename
            if name in names or (name == HEADER and header is not None):
                _fail(path, f"duplicate member {name!r}")
            if name == HEADER:
                header = zi
                continue
            m = MEMBER_RE.match(name)
            if not m:
                _fail(path, f"unexpected member {name!r} (only {HEADER} and v/NNNNNNNN allowed)")
            if zi.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                _fail(path, f"member {name!r}: unsupported compression {zi.compress_type}")
            if zi.file_size > MAX_RATIO * zi.compress_size + 1024:
                _fail(path, f"member {name!r}: declared size {zi.file_size} is impossible for "
                      f"{zi.compress_size} compressed bytes (zip bomb?)")
            names[name] = int(m.group(1))
        if header is None:
            _fail(path, f"missing {HEADER}")
        if header.file_size > MAX_HEADER:
            _fail(path, f"{HEADER} is larger than {MAX_HEADER} bytes")
        try:
            with self.zf.open(header) as f:
                raw = f.read(MAX_HEADER + 1)
            h = json.loads(raw)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
            _fail(path, f"unreadable {HEADER}: {e}")
        if not isinstance(h, dict) or h.get("format") != "nnx-topology":
            _fail(path, f"{HEADER}: not an nnx-topology header")
        if h.get("version") != 1:
            _fail(path, f"{HEADER}: unsupported version {h.get('version')!r}")
        for key in ("vertices", "records", "synapses", "members"):
            v = h.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                _fail(path, f"{HEADER}: {key!r} must be a non-negative integer")
        if h.get("weight_encoding") not in ("int", "f32bits"):
            _fail(path, f"{HEADER}: weight_encoding must be 'int' or 'f32bits'")
        order = sorted(names.items(), key=lambda kv: kv[1])
        if [i for _, i in order] != list(range(len(order))) or len(order) != h["members"]:
            _fail(path, f"members must be v/00000000 .. v/{h['members'] - 1:08d} "
                  f"(found {len(order)})")
        total = sum(self.zf.getinfo(nm).file_size for nm, _ in order)
        # each vertex needs >= 4 bytes, each edge record >= 4 bytes
        if h["vertices"] * 4 > total or h["records"] * 4 > total - 4 * h["vertices"]:
            _fail(path, f"{HEADER}: counts (vertices={h['vertices']}, records={h['records']}) "
                  f"exceed what {total} data bytes can hold (truncated or hostile file)")
        if h["vertices"] >= 2**31 - 1:
            _fail(path, f"{HEADER}: too many vertices for int32 ids")
        self.header = h
        self.members = [nm for nm, _ in order]

    def chunks(self) -> Iterator[tuple[str, bytes]]:
        for nm in self.members:
            try:
                with self.zf.open(nm) as f:
                    while True:
                        b = f.read(CHUNK)
                        if not b:
                            break
                        yield nm, b
            except (zipfile.BadZipFile, zlib_error(), EOFError, OSError) as e:
                _fail(self.path, f"member {nm!r}: corrupt or truncated data ({e})")


def zlib_error():
    import zlib

    return zlib.error


# state machine over the integer stream; mode 0 builds undirected CSR rows,
# mode 1 collects the synapses with flag bit 0 (pre = this vertex)
# state: 0 phase, 1 current vertex, 2 edges left, 3 record write pos,
#        4 synapse write pos, 5 pending flag, 6 pending other, 7 pending esize
@nb.njit(cache=True)
def _consume(vals, cnt, st, n, nrec, nsyn, mode, f32, indptr, vsize, vweight,
             rec_other, rec_w, syn_pre, syn_post, syn_w):
    for i in range(cnt):
        x = vals[i]
        ph = st[0]
        if ph == 0:  # vertex id
            if x != np.uint64(st[1] + 1):
                return 1, i  # vertex out of order
            st[1] += 1
            if st[1] >= n:
                return 2, i
            st[0] = 1
        elif ph == 1:
            if x > np.uint64(1 << 62):
                return 3, i
            vsize[st[1]] = np.int64(x)
            st[0] = 2
        elif ph == 2:
            if x > np.uint64(1 << 62):
                return 3, i
            vweight[st[1]] = np.int64(x)
            st[0] = 3
        elif ph == 3:
            if x > np.uint64(nrec - st[3]):
                return 4, i  # more edges than the header allows
            st[2] = np.int64(x)
            if st[2] == 0:
                indptr[st[1] + 1] = st[3]
                st[0] = 0
            else:
                st[0] = 4
        elif ph == 4:
            if x < 1 or x > 3:
                return 5, i
            st[5] = np.int64(x)
            st[0] = 5
        elif ph == 5:
            if x >= np.uint64(n):
                return 6, i
            st[6] = np.int64(x)
            st[0] = 6
        elif ph == 6:
            st[7] = np.int64(x)
            st[0] = 7
        else:
            if f32:
                if x > np.uint64(0xFFFFFFFF):
                    return 7, i
                w = np.array([np.uint32(x)]).view(np.float32)[0]
                if not np.isfinite(w):
                    return 7, i
            else:
                w = np.float32(x)
            if mode == 0:
                rec_other[st[3]] = st[6]
                rec_w[st[3]] = abs(w)
            elif st[5] & 1:
                if st[4] >= nsyn:
                    return 8, i
                syn_pre[st[4]] = st[1]
                syn_post[st[4]] = st[6]
                syn_w[st[4]] = abs(w)
                st[4] += 1
            st[3] += 1
            st[2] -= 1
            if st[2] == 0:
                indptr[st[1] + 1] = st[3]
                st[0] = 0
            else:
                st[0] = 4
    return 0, cnt


_ERRORS = {
    1: "vertex records out of order or missing",
    2: "more vertices than the header declares",
    3: "vertex size/weight out of range",
    4: "edge count exceeds the header's record total",
    5: "invalid edge flag (must be 1, 2 or 3)",
    6: "edge endpoint is not a vertex of the topology",
    7: "invalid float32 edge weight",
    8: "more synapses than the header declares",
}


def _stream(path: str, mode: int):
    with _Archive(path) as ar:
        h = ar.header
        n, nrec, nsyn = h["vertices"], h["records"], h["synapses"]
        if mode == 1 and nsyn > nrec:
            _fail(path, f"{HEADER}: synapses ({nsyn}) exceed records ({nrec})")
        f32 = h["weight_encoding"] == "f32bits"
        indptr = np.zeros(n + 1, dtype=np.int64)
        vsize = np.zeros(n, dtype=np.int64)
        vweight = np.zeros(n, dtype=np.int64)
        if mode == 0:
            rec_other = np.empty(nrec, dtype=np.int32)
            rec_w = np.empty(nrec, dtype=np.float32)
            syn_pre = syn_post = np.empty(0, dtype=np.int32)
            syn_w = np.empty(0, dtype=np.float32)
        else:
            rec_other = np.empty(0, dtype=np.int32)
            rec_w = np.empty(0, dtype=np.float32)
            syn_pre = np.empty(nsyn, dtype=np.int32)
            syn_post = np.empty(nsyn, dtype=np.int32)
            syn_w = np.empty(nsyn, dtype=np.float32)
        st = np.zeros(8, dtype=np.int64)
        st[1] = -1
        vals = np.empty(CHUNK + 16, dtype=np.uint64)
        carry = b""
        offset = 0
        member = None
        for nm, data in ar.chunks():
            if nm != member:
                if carry:
                    _fail(path, f"member {member!r}: truncated varint at its end")
                member, offset = nm, 0
            buf = np.frombuffer(carry + data, dtype=np.uint8)
            cnt, used, err = decode_varints(buf, buf.shape[0], vals)
            if err:
                _fail(path, f"member {nm!r} byte {offset + used}: varint longer than 64 bits")
            code, at = _consume(vals, cnt, st, n, nrec, nsyn, mode, f32, indptr, vsize, vweight,
                                rec_other, rec_w, syn_pre, syn_post, syn_w)
            if code:
                _fail(path, f"member {nm!r} near byte {offset}: {_ERRORS[code]}")
            carry = bytes(buf[used:])
            offset += used
        if carry:
            _fail(path, f"member {member!r}: truncated varint at its end")
        if st[0] != 0 or st[1] != n - 1:
            _fail(path, f"truncated: {st[1] + 1} of {n} vertex records complete")
        if st[3] != nrec:
            _fail(path, f"header declares {nrec} edge records, file has {st[3]}")
        if mode == 1 and st[4] != nsyn:
            _fail(path, f"header declares {nsyn} synapses, file has {st[4]}")
        return h, indptr, vsize, vweight, rec_other, rec_w, syn_pre, syn_post, syn_w


def read_graph(path: str) -> Graph:
    """Stream a topology file into the undirected CSR graph the partitioner uses.

    Memory: the CSR arrays sized by the header (validated against the archive's
    byte counts) plus one 1 MiB decode buffer.
    """
    h, indptr, vsize, vweight, other, w, *_ = _stream(path, 0)
    indptr = merge_duplicates(indptr, other, w)
    m = int(indptr[-1])
    return Graph(indptr, _trim(other, m), _trim(w, m), vsize, vweight)


def read_synapses(path: str):
    """Read the directed synapses (records with flag bit 0) and per-vertex sizes.

    Returns (pre, post, weight, size)."""
    h, indptr, vsize, vweight, _, _, pre, post, w = _stream(path, 1)
    return pre, post, w, vsize


def info(path: str) -> dict:
    """Counts and totals of a topology file (reads it as the partitioner would)."""
    g = read_graph(path)
    with _Archive(path) as ar:
        h = dict(ar.header)
        csize = sum(ar.zf.getinfo(m).compress_size for m in ar.members)
        usize = sum(ar.zf.getinfo(m).file_size for m in ar.members)
    return {
        "vertices": h["vertices"],
        "synapses": h["synapses"],
        "edge_records": h["records"],
        "undirected_edges": g.nnz // 2,
        "members": h["members"],
        "weight_encoding": h["weight_encoding"],
        "total_vertex_size": int(g.vsize.sum()),
        "max_vertex_size": int(g.vsize.max(initial=0)),
        "total_neurons": int(g.vcount.sum()),
        "total_edge_weight": g.total_edge_weight(),
        "compressed_bytes": csize,
        "uncompressed_bytes": usize,
        "file_bytes": os.path.getsize(path),
    }
