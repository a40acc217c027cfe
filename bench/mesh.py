"""Benchmark: the mesh schedules compared (docs/mesh.md, "Schedules", "Measured").

Per model (ResNet-18 224x224, MobileNetV2 224x224, a 2-layer BERT of base width:
hidden 768, 12 heads, vocabulary 30522, sequence 128), in the same run:

* the MAC bound: the MACs of its Conv/Gemm/MatMul ops over the MACs per cycle of
  targets/mesh.toml (16 x 16 cores x 256): no schedule runs one inference faster;
* compiled for targets/mesh.toml with each schedule (`latency`; `throughput`, the
  searched layer pipeline, and `proportional`, the first throughput schedule;
  `stages`, today's one-stage-per-core schedule, with `placement=bisect` and
  `rowmajor`), each
  simulated by the mesh simulator for one inference (cycles, weight load, latency)
  and, with `--stream N`, for N inferences back to back (cycles per inference);
  every ratio is to the MAC bound;
* with `--single`, the single-core default target (the original baseline);
* onnxruntime on the same inputs (the reference outputs, and the wall time of a
  fresh `python -c` process).

Prints per schedule the cycles, latency and stream figures as ratios to the bound,
byte-hops, compile and simulation times, the largest |mesh - onnxruntime| (of
every inference of the stream) and what the cycles go to (`busy_breakdown`: unit
busy cycles of the mean and busiest core, the busiest link); then the acceptance
checks (|err| <= 1e-4; latency below today's cycles less the weight load; with
`--stream`, the throughput schedule's cycles per inference at most 2x the bound on
the ResNets, 10x on other models).

The models are exported with random weights into cache/bench-models/ on first use
(ResNet-18/-50, MobileNetV2, RegNetX-400MF and SqueezeNet 1.1 by bench/models.py; the
BERT here, from a transformers BertConfig, offline).

Usage: .venv/bin/python bench/mesh.py [MODEL ...]   (resnet18 mobilenet_v2 bert2-base; also any
       model bench/models.py exports (resnet50, regnet_x_400mf, squeezenet1_1) or that is in
       cache/bench-models/ such as tv_googlenet; highres_cnn: a 2048 x 2048 CNN
       of 5.3 MB weights, 0.36 G MACs; and light:NAME for the onnx
       wheel's light zoo: light:squeezenet, light:shufflenet, ...)
       --stream N                  also run N inferences back to back per schedule
       --schedules latency,stages:rowmajor   the (schedule[:placement]) runs to compare
                                   (latency, throughput, proportional, stages; latency-untiled:
                                   the latency schedule without tile splits, LATENCY_TILES off)
       --single                    also the single-core default target
       --set MODULE.NAME=VALUE     a rule of nnx/mesh/MODULE.py switched for the run (repeatable), e.g.
                                   --set latency.LATENCY_TILE_BANDS=False --set latency.LATENCY_ALIGN_ROOTS=False
       --target PATH               another mesh target (default targets/mesh.toml; e.g.
                                   targets/mesh12x12.toml; the bound is that mesh's MACs per cycle)
"""

from __future__ import annotations

import ast
import importlib
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
    if name == "highres_cnn":  # the test model zoo's high-resolution CNN at its defaults
        sys.path.insert(0, str(ROOT / "test" / "python"))
        import model_zoo

        model_zoo.highres_cnn(path)
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


def mac_bound(path: Path) -> tuple[int, int]:
    """(MACs of the model's Conv/Gemm/MatMul ops, the cycles they take at the mesh's
    MACs per cycle): no schedule finishes one inference faster (docs/mesh.md,
    "Schedules")."""
    from nnx import api
    from nnx.dialects.traits import MatrixCompute
    from nnx.mesh.partition import op_cost
    from nnx.target import load_target

    module = api.import_onnx(str(path), None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    macs = int(sum(op_cost(op) for op in module.walk() if op.has_trait(MatrixCompute)))
    tgt = load_target(MESH)
    per_cycle = tgt.mesh.width * tgt.mesh.height * tgt.unit("MPU").throughput * tgt.unit("MPU").count
    return macs, -(-macs // per_cycle)


def run_mesh(path: Path, feeds, schedule: str, placement: str, work: Path, stream: int) -> dict:
    """Compile for targets/mesh.toml with `schedule` (and `placement`), run one
    inference, and a stream of `stream` inferences (0: none)."""
    from nnx import api
    from nnx.mesh.compile import compile_for_mesh
    from nnx.named_arrays import safe_name
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    from nnx.mesh import latency

    def build():
        module = api.import_onnx(str(path), None, 1)
        api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
        tiles = latency.LATENCY_TILES
        latency.LATENCY_TILES = tiles and schedule != UNTILED  # the latency schedule without tile splits
        try:
            return compile_for_mesh(module, MESH, placement, schedule="latency" if schedule == UNTILED else schedule)
        finally:
            latency.LATENCY_TILES = tiles

    comp, t_compile = timed(build)
    asm = str(work / f"{schedule}-{placement}.s")
    save_mesh_program(comp, asm)
    sim = MeshSimulator(read_mesh_program(asm), load_target(MESH))
    # the program's symbols are the ONNX names with characters such as '/' made '_'
    named = {safe_name(k): v for k, v in feeds.items()}
    res, t_sim = timed(lambda: sim.run(named))
    outputs = {k: res.outputs[safe_name(k)] for k in outputs_of(path)}
    out = {"cycles": res.cycles, "load": res.load_cycles, "latency": res.latency_cycles, "hops": res.noc_byte_hops,
           "noc_bytes": res.noc_bytes, "outputs": outputs, "cores": len(comp.program.cores),
           "t_compile": t_compile, "t_sim": t_sim, "per_inference": None, "busy": busy_breakdown(res),
           "schedule": UNTILED if schedule == UNTILED and comp.schedule == "latency" else comp.schedule}
    if stream:
        st = sim.run(named, stream=stream)
        out["per_inference"] = st.cycles_per_inference
        out["stream_outputs"] = {k: st.outputs[safe_name(k)] for k in outputs_of(path)}
    return out


def busy_breakdown(res) -> str:
    """What the cycles of one inference go to: per unit type, the busy cycles of the
    mean and the busiest core, and the busiest NoC link's, each over the cycles after
    the weight load (what dominates the latency: compute, data movement or links)."""
    run = max(1, res.cycles - res.load_cycles)
    kinds: dict[str, list[int]] = {}
    for st in res.cores.values():
        per: dict[str, int] = {}
        for unit, b in st.unit_busy.items():
            per[unit[:3]] = max(per.get(unit[:3], 0), b)  # the busiest instance of each type
        for k, b in per.items():
            kinds.setdefault(k, []).append(b)
    parts = [f"{k} mean {np.mean(v) / run:.0%} max {max(v) / run:.0%}" for k, v in sorted(kinds.items())]
    link = max(res.link_cycles.values(), default=0)
    return "busy/(cycles - load): " + ", ".join(parts) + f"; busiest link {link / run:.0%}"


def run_single(path: Path, feeds) -> dict:
    from nnx import api

    prog, t_compile = timed(lambda: api.compile(str(path), None, batch=1))
    res, t_sim = timed(lambda: api.simulate(prog, feeds))
    return {"cycles": res.cycles, "outputs": res.outputs, "t_compile": t_compile, "t_sim": t_sim}


#: the latency schedule with `latency.LATENCY_TILES` off (no tile splits), as a
#: schedule name of --schedules
UNTILED = "latency-untiled"

#: (schedule, placement) compared by default: the latency schedule and today's
#: stage-per-core schedule with both placements
RUNS = (("latency", "bisect"), ("stages", "bisect"), ("stages", "rowmajor"))


def bench(name: str, single: bool, stream: int, runs=RUNS) -> dict:
    import onnxruntime as ort

    path = model_path(name)
    feeds = feeds_for(path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    macs, bound = mac_bound(path)
    with tempfile.TemporaryDirectory(prefix="nnx-bench-mesh-") as d:
        work = Path(d)
        np.savez(work / "x.npz", **feeds)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", ORT, str(path), str(work / "x.npz")], check=True)
        t_ort = time.perf_counter() - t0
        r = {run: run_mesh(path, feeds, *run, work, stream) for run in runs}
    s = run_single(path, feeds) if single else None
    print(f"\n== {name} ({path.name}): {macs} MACs, MAC bound {bound} cycles on {Path(MESH).name}")
    errs = {}
    for (sched, place), x in r.items():
        err = max(float(np.max(np.abs(x["outputs"][k] - v))) for k, v in refs.items())
        if "stream_outputs" in x:  # every inference of the stream (one input reused)
            err = max([err] + [float(np.max(np.abs(x["stream_outputs"][k] - v[None]))) for k, v in refs.items()])
        errs[(sched, place)] = err
        run = x["cycles"] - x["load"]
        if x["schedule"] != sched:  # compile_for_mesh fell back
            print(f"  {sched}: did not fit one program; compiled as {x['schedule']}")
        line = (f"  {sched:8s} {place:8s} cores {x['cores']:3d}  cycles {x['cycles']} (weight load {x['load']}), "
                f"latency {x['latency']} = {x['latency'] / bound:.1f}x bound, cycles - load {run} = "
                f"{run / bound:.1f}x")
        if x["per_inference"] is not None:
            pi = x["per_inference"]
            line += f", stream {stream}: {pi:.0f} cycles/inference = {pi / bound:.1f}x bound ({bound / pi:.0%} MACs)"
        print(line)
        print(f"  {'':17s} byte-hops {x['hops']}, noc bytes {x['noc_bytes']}, compile {x['t_compile']:.1f} s, "
              f"simulate {x['t_sim']:.1f} s, max|err| {err:.2e}")
        print(f"  {'':17s} {x['busy']}")
    if s is not None:
        err_s = max(float(np.max(np.abs(s["outputs"][k] - v))) for k, v in refs.items())
        print(f"  single-core: {s['cycles']} cycles (compile {s['t_compile']:.1f} s, max|err| {err_s:.2e})")
    print(f"  onnxruntime process {t_ort:.2f} s")
    ok = {"err<=1e-4": max(errs.values()) <= 1e-4}
    ok.update({f"{sched} fits": x["schedule"] == sched for (sched, _), x in r.items()})
    base = r.get(("stages", "bisect"))
    if ("latency", "bisect") in r and base is not None:
        lat = r[("latency", "bisect")]
        ok["latency < stages"] = lat["latency"] < base["cycles"] - base["load"]
        print(f"  latency schedule / stages (cycles - weight load): "
              f"{lat['latency'] / (base['cycles'] - base['load']):.3f}x; compile time "
              f"{lat['t_compile'] / base['t_compile']:.2f}x")
    if ("latency", "bisect") in r and (UNTILED, "bisect") in r:
        lat, old = r[("latency", "bisect")], r[(UNTILED, "bisect")]
        print(f"  latency with tile splits / without: {lat['latency'] / old['latency']:.3f}x the latency; "
              f"compile time {lat['t_compile'] / old['t_compile']:.2f}x")
    pipe = r.get(("throughput", "bisect"))
    if pipe is not None and pipe["per_inference"] is not None:
        # issue 19: at most 2x the bound on the ResNets (>= 50 % of the MACs), 10x on others
        limit = 2.0 if name.startswith("resnet") else 10.0
        ok[f"throughput stream <= {limit:.0f}x bound"] = pipe["per_inference"] <= limit * bound
        for other in ("proportional", "stages"):
            if (other, "bisect") in r and r[(other, "bisect")]["per_inference"]:
                print(f"  throughput / {other} (stream cycles per inference): "
                      f"{pipe['per_inference'] / r[(other, 'bisect')]['per_inference']:.3f}x")
    print("  acceptance: " + ", ".join(f"{k} {'ok' if v else 'FAIL'}" for k, v in ok.items()))
    sys.stdout.flush()
    return ok


def set_rule(text: str) -> None:
    """`--set MODULE.NAME=VALUE`: the rule NAME of nnx/mesh/MODULE.py set to the Python
    literal VALUE for this run; a malformed one, an unknown module or rule, or a
    value that is not a literal exits with one line."""
    name, eq, value = text.partition("=")
    module, dot, attr = name.rpartition(".")
    if not eq or not dot:
        raise SystemExit(f"bench/mesh.py: --set wants MODULE.NAME=VALUE, got '{text}'")
    try:
        mod = importlib.import_module(f"nnx.mesh.{module}")
    except ImportError:
        raise SystemExit(f"bench/mesh.py: --set {text}: no module nnx/mesh/{module}.py") from None
    if not hasattr(mod, attr):
        raise SystemExit(f"bench/mesh.py: --set {text}: nnx/mesh/{module}.py has no rule '{attr}'")
    try:
        setattr(mod, attr, ast.literal_eval(value))
    except (ValueError, SyntaxError):
        raise SystemExit(f"bench/mesh.py: --set {text}: '{value}' is not a Python literal") from None


def main() -> None:
    global MESH
    argv = sys.argv[1:]
    if "--target" in argv:
        k = argv.index("--target")
        MESH = str(Path(argv[k + 1]).resolve())
        del argv[k:k + 2]
    stream = 0
    if "--stream" in argv:
        k = argv.index("--stream")
        stream = int(argv[k + 1])
        del argv[k:k + 2]
    runs = RUNS
    if "--schedules" in argv:
        k = argv.index("--schedules")
        runs = tuple(tuple(x.split(":")) if ":" in x else (x, "bisect") for x in argv[k + 1].split(","))
        del argv[k:k + 2]
    while "--set" in argv:  # a rule of nnx.mesh switched, e.g. latency.LATENCY_TILE_BANDS=False
        k = argv.index("--set")
        set_rule(argv[k + 1] if k + 1 < len(argv) else "")
        del argv[k:k + 2]
    args = [a for a in argv if not a.startswith("--")]
    single = "--single" in argv
    from nnx.mesh.errors import MeshFitError

    results = {}
    for n in args or MODELS:
        try:
            results[n] = bench(n, single, stream, runs)
        except MeshFitError as e:  # reported, and the other models still run
            print(f"\n== {n}: {e}")
            results[n] = {"compiles": False}
        sys.stdout.flush()
    bad = [f"{n}: {k}" for n, ok in results.items() for k, v in ok.items() if not v]
    print("\nacceptance: " + ("all ok" if not bad else "FAIL " + "; ".join(bad)))


if __name__ == "__main__":
    main()
