"""Benchmark: spatial compilation onto the mesh (docs/mesh.md, "Compilation", "Measured").

Per model (ResNet-18 224x224, MobileNetV2 224x224, a 2-layer BERT of base width:
hidden 768, 12 heads, vocabulary 30522, sequence 128), in the same run:

* compiled for targets/mesh.toml (16 x 16 cores) with `placement=bisect` and with
  `placement=rowmajor`, both simulated by the mesh simulator;
* compiled for the single-core default target and simulated (the baseline);
* onnxruntime on the same inputs, in-process (the reference outputs) and as a fresh
  `python -c` process (the wall-time baseline).

Prints mesh / single-core cycles, bisect / rowmajor `noc_byte_hops` and cycles, the
largest |mesh - onnxruntime|, compile times, and the mesh simulator's wall time over
onnxruntime's whole-process time; then the acceptance checks (|err| <= 1e-4, bisect
<= 0.7x rowmajor byte-hops and fewer cycles, ResNet-18 simulation <= 200x onnxruntime).

The models are exported with random weights into cache/bench-models/ on first use
(ResNet-18 and MobileNetV2 by bench/models.py when it knows them; the BERT here, from a
transformers BertConfig, offline).

Usage: .venv/bin/python bench/mesh.py [MODEL ...]   (resnet18 mobilenet_v2 bert2-base; also any
       model in cache/bench-models/ such as resnet50, tv_googlenet, and light:NAME for the onnx
       wheel's light zoo: light:squeezenet, light:shufflenet, ...)
       .venv/bin/python bench/mesh.py --no-single   (skip the single-core baseline)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

CACHE = ROOT / "cache" / "bench-models"
MESH = str(ROOT / "targets" / "mesh.toml")
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
MODELS = ("resnet18", "mobilenet_v2", "bert2-base")
SEQ = 128

ORT = """
import sys, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = dict(np.load(sys.argv[2]))
s.run(None, feeds)
"""


def _bert2_base(path: Path) -> None:
    """BertModel with BERT-base width (768 hidden, 12 heads, 3072 intermediate, vocab
    30522) and 2 layers, random weights, exported with a fixed 1 x 128 input."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(num_hidden_layers=2, attn_implementation="eager")).eval()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    feeds = {k: torch.from_numpy(v) for k, v in _bert_feeds().items()}
    tmp = path.with_suffix(".tmp.onnx")
    torch.onnx.export(Wrapper().eval(), (feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"]),
                      str(tmp), input_names=list(feeds), output_names=["last_hidden_state", "pooler_output"],
                      opset_version=17, dynamo=False)
    tmp.rename(path)


def _bert_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"input_ids": rng.integers(0, 30522, (1, SEQ)).astype(np.int64),
            "attention_mask": np.ones((1, SEQ), np.int64),
            "token_type_ids": np.zeros((1, SEQ), np.int64)}


def model_path(name: str) -> Path:
    """A bench model (cache/bench-models/, exported on first use) or, as `light:NAME`,
    one of the onnx wheel's light zoo CNNs (test/python/model_zoo.py)."""
    if name.startswith("light:"):
        sys.path.insert(0, str(ROOT / "test" / "python"))
        import model_zoo

        return model_zoo.light_model_path(name.split(":", 1)[1])
    path = CACHE / f"{name}.onnx"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    if name == "bert2-base":
        _bert2_base(path)
        return path
    import models

    return models.get(name)


def feeds_for(path: Path) -> dict[str, np.ndarray]:
    import onnx

    m = onnx.load(str(path), load_external_data=False)
    if m.graph.input[0].name == "input_ids":
        return _bert_feeds()
    rng = np.random.default_rng(0)
    out = {}
    weights = {t.name for t in m.graph.initializer}  # IR 3 lists the weights as inputs too
    for i in m.graph.input:
        if i.name in weights:
            continue
        shape = [max(1, d.dim_value) for d in i.type.tensor_type.shape.dim]
        out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out


def outputs_of(path: Path) -> list[str]:
    import onnx

    return [o.name for o in onnx.load(str(path), load_external_data=False).graph.output]


def timed(fn):
    t = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t


def run_mesh(path: Path, feeds, placement: str, work: Path) -> dict:
    from nnx import api
    from nnx.mesh.compile import compile_for_mesh
    from nnx.named_arrays import safe_name
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    def build():
        module = api.import_onnx(str(path), None, 1)
        api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
        return compile_for_mesh(module, MESH, placement)

    comp, t_compile = timed(build)
    asm = str(work / f"{placement}.s")
    save_mesh_program(comp, asm)
    sim = MeshSimulator(read_mesh_program(asm), load_target(MESH))
    # the program's symbols are the ONNX names with characters such as '/' made '_'
    res, t_sim = timed(lambda: sim.run({safe_name(k): v for k, v in feeds.items()}))
    outputs = {k: res.outputs[safe_name(k)] for k in outputs_of(path)}
    return {"cycles": res.cycles, "hops": res.noc_byte_hops, "noc_bytes": res.noc_bytes, "outputs": outputs,
            "stages": len(comp.plan.stages), "t_compile": t_compile, "t_sim": t_sim}


def run_single(path: Path, feeds) -> dict:
    from nnx import api

    prog, t_compile = timed(lambda: api.compile(str(path), None, batch=1))
    res, t_sim = timed(lambda: api.simulate(prog, feeds))
    return {"cycles": res.cycles, "outputs": res.outputs, "t_compile": t_compile, "t_sim": t_sim}


def bench(name: str, single: bool) -> dict:
    import onnxruntime as ort

    path = model_path(name)
    feeds = feeds_for(path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    with tempfile.TemporaryDirectory(prefix="nnx-bench-mesh-") as d:
        work = Path(d)
        np.savez(work / "x.npz", **feeds)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", ORT, str(path), str(work / "x.npz")], check=True)
        t_ort = time.perf_counter() - t0
        r = {p: run_mesh(path, feeds, p, work) for p in ("bisect", "rowmajor")}
    r["single"] = run_single(path, feeds) if single else None
    err = max(float(np.max(np.abs(r[p]["outputs"][k] - v))) for p in ("bisect", "rowmajor") for k, v in refs.items())
    b, w = r["bisect"], r["rowmajor"]
    print(f"\n== {name} ({path.name}): {b['stages']} stages on 256 cores")
    print(f"  compile bisect {b['t_compile']:.1f} s, rowmajor {w['t_compile']:.1f} s")
    print(f"  cycles: bisect {b['cycles']}, rowmajor {w['cycles']}  (bisect/rowmajor {b['cycles'] / w['cycles']:.2f}x)")
    print(f"  noc_byte_hops: bisect {b['hops']}, rowmajor {w['hops']}  "
          f"(bisect/rowmajor {b['hops'] / max(1, w['hops']):.2f}x); noc_bytes {b['noc_bytes']}")
    if r["single"] is not None:
        s = r["single"]
        err_s = max(float(np.max(np.abs(s["outputs"][k] - v))) for k, v in refs.items())
        print(f"  single-core: {s['cycles']} cycles (compile {s['t_compile']:.1f} s, simulate {s['t_sim']:.1f} s, "
              f"max|err| {err_s:.2e}); mesh(bisect)/single-core cycles {b['cycles'] / s['cycles']:.3f}x")
    print(f"  max |err| vs onnxruntime: {err:.2e}")
    print(f"  mesh simulator wall: bisect {b['t_sim']:.1f} s, rowmajor {w['t_sim']:.1f} s; onnxruntime process "
          f"{t_ort:.2f} s; ratio {b['t_sim'] / t_ort:.1f}x")
    ok = {"err<=1e-4": err <= 1e-4, "hops<=0.7x": b["hops"] <= 0.7 * w["hops"], "fewer cycles": b["cycles"] < w["cycles"]}
    if name == "resnet18":
        ok["sim<=200x ort"] = b["t_sim"] / t_ort <= 200
    print("  acceptance: " + ", ".join(f"{k} {'ok' if v else 'FAIL'}" for k, v in ok.items()))
    sys.stdout.flush()
    return ok


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    single = "--no-single" not in sys.argv
    from nnx.mesh.errors import MeshFitError

    results = {}
    for n in args or MODELS:
        try:
            results[n] = bench(n, single)
        except MeshFitError as e:  # reported, and the other models still run
            print(f"\n== {n}: {e}")
            results[n] = {"compiles": False}
        sys.stdout.flush()
    bad = [f"{n}: {k}" for n, ok in results.items() for k, v in ok.items() if not v]
    print("\nacceptance: " + ("all ok" if not bad else "FAIL " + "; ".join(bad)))


if __name__ == "__main__":
    main()
