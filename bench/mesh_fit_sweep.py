"""Benchmark: which models compile and run on which meshes (docs/mesh.md, "Fitting
small meshes"; docs/subgraph-split-fuse.md, "Program packages").

For every (model, mesh) pair: `nnx-compile MODEL -o prog.s --target MESH.toml` (one
mesh program when the model fits, else a package of programs chosen by
subgraph-split / compile-and-retry / subgraph-fuse), then the program or package is
run on the mesh simulator, as `nnx-run prog.s` does, and compared with onnxruntime.
Prints per pair: programs, cycles, max |err|, compile and simulation seconds, or the
one-line fit failure.

Meshes are the 4 x 4 test target (test/passes/lower-to-mesh/Inputs/mesh4x4.toml)
resized (see `write_target`):
`WxH:BYTES` (e.g. `4x4:128K`), or `quarter:WxH`: W x H cores sharing a quarter of the
model's weight bytes (or twice its largest op's weights when that is more, the
acceptance rule of issue 12), rounded up to 64 bytes per core.

Models: test/python/model_zoo.py names (tiny_resnet, mobilenet_v2, bert_2layer,
gpt2_2layer, and its SWEEP names such as gpt2, efficientnet), or bench model names
(resnet18, mobilenet_v2-224 = bench/models.py's MobileNetV2, bert2-base).

Usage: .venv/bin/python bench/mesh_fit_sweep.py [--models a,b] [--meshes 4x4:128K,quarter:8x8]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "test" / "python"))

import numpy as np  # noqa: E402

DEFAULT_MODELS = "bert_2layer,gpt2_2layer,mobilenet_v2,tiny_resnet"
DEFAULT_MESHES = "4x4:128K,8x8:64K,2x2:256K,quarter:4x4"


def model_file(name: str) -> tuple[Path, dict[str, np.ndarray], dict | None]:
    """The ONNX file, sample inputs and input shapes (None: the file's own) of `name`."""
    import model_zoo

    if name in model_zoo.MODEL_NAMES:
        shapes = {k: s for k, (s, _) in model_zoo.MODEL_INPUTS[name].items()}
        return model_zoo.get_model(name), model_zoo.sample_inputs(name), shapes
    if name in model_zoo.SWEEP:
        shapes = {k: s for k, (s, _) in model_zoo.SWEEP[name].inputs.items()}
        return model_zoo.get_export(name), model_zoo.sweep_inputs(name), shapes
    import mesh as bench_mesh

    path = bench_mesh.model_path(name.removesuffix("-224"))
    return path, bench_mesh.feeds_for(path), None


def weight_stats(path: Path) -> tuple[int, int]:
    """(total weight bytes, largest weight bytes of one node) of an ONNX file."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(path))
    sizes = {i.name: numpy_helper.to_array(i).nbytes for i in m.graph.initializer}
    biggest = max((sum(sizes.get(x, 0) for x in n.input) for n in m.graph.node), default=0)
    return sum(sizes.values()), biggest


def parse_bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+)([KM]?)", text)
    if not m:
        raise SystemExit(f"mesh_fit_sweep: bad size '{text}' (e.g. 128K, 2M, 65536)")
    return int(m.group(1)) * {"": 1, "K": 1024, "M": 1 << 20}[m.group(2)]


def mesh_spec(spec: str, path: Path) -> tuple[int, int, int]:
    """(width, height, core memory bytes) of a mesh spec for the model at `path`."""
    kind, _, rest = spec.partition(":")
    if kind == "quarter":
        w, h = (int(x) for x in rest.split("x"))
        total, biggest = weight_stats(path)
        allowed = max(total // 4, 2 * biggest) if biggest > total // 4 else total // 4
        per_core = allowed // (w * h) // 64 * 64
        return w, h, per_core
    w, h = (int(x) for x in kind.split("x"))
    return w, h, parse_bytes(rest)


BASE_TARGET = ROOT / "test" / "passes" / "lower-to-mesh" / "Inputs" / "mesh4x4.toml"


def write_target(width: int, height: int, core_memory: int, where: Path) -> Path:
    """The 4 x 4 test target (32 KiB caches) resized: its mesh size and core memory
    replaced; on cores too small for its caches (their sum must fit a core) the
    caches shrink to a power of two of at most a quarter of the core, with the tile
    sizes scaled so that every cache still holds 8 tiles of each kind."""
    text = BASE_TARGET.read_text()
    text = re.sub(r"(?m)^width = \d+", f"width = {width}", text)
    text = re.sub(r"(?m)^height = \d+", f"height = {height}", text)
    text = re.sub(r"(?m)^core_memory_bytes = \d+", f"core_memory_bytes = {core_memory}", text)
    cache = 32768
    while 3 * cache > core_memory and cache > 2048:
        cache //= 2
    if cache < 32768:
        text = re.sub(r"(?m)^bytes = 32768", f"bytes = {cache}", text)
        side = 32
        while 8 * side * side * 4 > cache:
            side //= 2
        for key in ("mpu_m", "mpu_n", "mpu_k"):
            text = re.sub(rf"(?m)^{key} = \d+", f"{key} = {side}", text)
        text = re.sub(r"(?m)^vpu_elements = \d+", f"vpu_elements = {cache // 32}", text)
    out = where / f"mesh{width}x{height}_{core_memory}.toml"
    out.write_text(text)
    return out


def run_pair(name: str, spec: str, work: Path) -> str:
    import onnxruntime as ort

    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.sim.package import is_package, read_package, run_package
    from nnx.target import load_target
    from nnx.tools.nnx_compile import main as nnx_compile

    path, feeds, shapes = model_file(name)
    w, h, mem = mesh_spec(spec, path)
    target = write_target(w, h, mem, work)
    head = f"{name:14s} {spec:14s} {w}x{h} x {mem // 1024} KiB ({w * h * mem / 1e6:.1f} MB)"
    asm = work / f"{name}-{w}x{h}-{mem}.s"
    argv = [str(path), "-o", str(asm), "--target", str(target)]
    for k, s in (shapes or {}).items():
        argv += ["--input-shape", f"{k}={'x'.join(str(d) for d in s)}"]
    import contextlib
    import io

    err = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stderr(err):
        rc = nnx_compile(argv)
    t_compile = time.perf_counter() - t
    if rc != 0:
        return f"{head}: does not fit ({t_compile:.0f} s): {err.getvalue().strip().splitlines()[-1]}"
    tgt = load_target(str(target))
    t = time.perf_counter()
    if is_package(str(asm)):
        res = run_package(read_package(str(asm)), feeds, tgt)
        programs, cycles, outs = len(res.runs), res.cycles, res.outputs
    else:
        r = MeshSimulator(read_mesh_program(str(asm)), tgt).run(dict(feeds))
        programs, cycles, outs = 1, r.cycles, r.outputs
    t_sim = time.perf_counter() - t
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    e = max(float(np.max(np.abs(outs[k] - v))) for k, v in refs.items())
    return (f"{head}: {programs} program(s), {cycles} cycles, max|err| {e:.1e} "
            f"{'ok' if e <= 1e-4 else 'FAIL'} (compile {t_compile:.0f} s, simulate {t_sim:.0f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--meshes", default=DEFAULT_MESHES)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nnx-fit-sweep-") as d:
        for name in args.models.split(","):
            for spec in args.meshes.split(","):
                try:
                    line = run_pair(name, spec, Path(d))
                except Exception as e:  # one pair's failure must not hide the others
                    line = f"{name} {spec}: ERROR {type(e).__name__}: {str(e).splitlines()[0][:300]}"
                print(line, flush=True)


if __name__ == "__main__":
    main()
