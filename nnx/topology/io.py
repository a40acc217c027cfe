"""Loading neuron topologies from the inputs nnx-map and nnx-topo accept: the
topology zip format (:mod:`nnx.topology.format`) or an ``.npz`` edge list with
int arrays ``pre``, ``post``, optional float ``weight`` (|weight| is used,
default 1) and optional int ``size`` per neuron (default 1)."""

from __future__ import annotations

import zipfile

import numpy as np

from .format import TopologyFormatError, read_graph, read_synapses
from .graph import Graph, from_edges

MAX_NPZ_MEMBER = 1 << 40


def is_topology_zip(path: str) -> bool:
    try:
        with zipfile.ZipFile(path) as zf:
            return "topology.json" in zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return False


def load_npz(path: str):
    """Validated (pre, post, weight, size) of an .npz edge list."""
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise TopologyFormatError(f"{path}: not a readable .npz file ({e})") from None
    with z:
        names = set(z.files)
        for need in ("pre", "post"):
            if need not in names:
                raise TopologyFormatError(f"{path}: missing array {need!r} "
                                          f"(has {sorted(names)})")
        try:
            pre = z["pre"]
            post = z["post"]
            weight = z["weight"] if "weight" in names else None
            size = z["size"] if "size" in names else None
        except (ValueError, zipfile.BadZipFile, EOFError, OSError) as e:
            raise TopologyFormatError(f"{path}: corrupt array data ({e})") from None
    for nm, a in (("pre", pre), ("post", post)):
        if a.ndim != 1 or a.dtype.kind not in "iu":
            raise TopologyFormatError(f"{path}: {nm!r} must be a 1-D integer array")
    if pre.shape != post.shape:
        raise TopologyFormatError(f"{path}: 'pre' has {pre.size} entries, 'post' {post.size}")
    if pre.size and (pre.min() < 0 or post.min() < 0):
        raise TopologyFormatError(f"{path}: negative neuron index")
    n = int(max(pre.max(initial=-1), post.max(initial=-1)) + 1)
    if weight is not None:
        if weight.shape != pre.shape or weight.dtype.kind not in "fiu":
            raise TopologyFormatError(f"{path}: 'weight' must be numeric with one entry "
                                      f"per synapse")
        if not np.all(np.isfinite(weight)):
            raise TopologyFormatError(f"{path}: 'weight' has NaN or infinite entries")
        weight = np.abs(weight).astype(np.float32)
    if size is not None:
        if size.ndim != 1 or size.dtype.kind not in "iu":
            raise TopologyFormatError(f"{path}: 'size' must be a 1-D integer array")
        if size.size < n:
            raise TopologyFormatError(f"{path}: 'size' has {size.size} entries but synapses "
                                      f"reference neuron {n - 1}")
        if size.size and size.min() < 0:
            raise TopologyFormatError(f"{path}: negative neuron size")
        n = int(size.size)
    if n >= 2**31 - 1:
        raise TopologyFormatError(f"{path}: too many neurons for int32 ids")
    return pre.astype(np.int32, copy=False), post.astype(np.int32, copy=False), weight, size, n


def load_graph(path: str) -> tuple[Graph, int]:
    """The undirected CSR graph of a topology file and its synapse count."""
    if is_topology_zip(path):
        from .format import _Archive

        with _Archive(path) as ar:
            nsyn = ar.header["synapses"]
        return read_graph(path), nsyn
    if not path.endswith(".npz"):
        try:
            open(path, "rb").close()
        except OSError as e:
            raise TopologyFormatError(f"{path}: {e.strerror}") from None
        raise TopologyFormatError(f"{path}: neither an nnx topology zip nor an .npz edge list")
    pre, post, weight, size, n = load_npz(path)
    return from_edges(pre, post, weight, size, n=n), int(pre.size)


def load_synapses(path: str):
    """(pre, post, weight, size, n) of either input form."""
    if is_topology_zip(path):
        pre, post, w, size = read_synapses(path)
        return pre, post, w, size, size.shape[0]
    pre, post, weight, size, n = load_npz(path)
    if weight is None:
        weight = np.ones(pre.size, dtype=np.float32)
    if size is None:
        size = np.ones(n, dtype=np.int64)
    return pre, post, weight, size, n
