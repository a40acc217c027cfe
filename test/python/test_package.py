"""Program packages (docs/subgraph-split-fuse.md, "Program packages"): a model larger
than the mesh compiles (`nnx-compile --target`) to a manifest plus one mesh program
per subgraph, and `nnx-run` runs them in order with weight loads and parked outputs;
outputs match onnxruntime within 1e-4. Greedy fusion gives at most one program more
than the optimal dynamic program; an op that cannot fit the mesh alone is one line,
exit 1, no files.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import model_zoo
from nnx import api
from nnx.split_fuse.fit import FitChecker, split_until_fit
from nnx.split_fuse.fuse import Fuser, FusionWindow, fuse_chain
from mesh_targets import resized_mesh

HERE = os.path.dirname(__file__)
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"


def _mesh_target(tmp_path, width, height, core_memory):
    return resized_mesh(tmp_path, width, height, core_memory)


def _mlp_model(path, layers=8, width=256, every=2):
    """Gemm+Relu layers of width x width f32 weights (256 KiB each); every `every`-th
    hidden state is also a model output (a target node)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits, outs = [], [], []
    x = "x"
    for k in range(layers):
        w = numpy_helper.from_array((rng.standard_normal((width, width)) / 16).astype(np.float32), f"W{k}")
        inits.append(w)
        nodes.append(helper.make_node("Gemm", [x, f"W{k}"], [f"g{k}"], name=f"gemm{k}"))
        nodes.append(helper.make_node("Relu", [f"g{k}"], [f"h{k}"], name=f"relu{k}"))
        x = f"h{k}"
        if k % every == every - 1 or k == layers - 1:
            outs.append(helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width]))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return layers * width * width * 4


def _compile_and_run(tmp_path, model, target, feeds, extra=(), run_extra=()):
    from nnx.tools.nnx_compile import main as compile_main
    from nnx.tools.nnx_run import main as run_main

    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog), *extra]) == 0
    args = [str(prog), "--target", target, "--output-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.json"),
            *run_extra]
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        args += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    assert run_main(args) == 0
    return prog, json.loads((tmp_path / "r.json").read_text())


def _check_outputs(tmp_path, model, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model))
    for out, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        got = np.load(tmp_path / "out" / f"{out.name}.npy")
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-4)


def test_mlp_runs_as_a_package_on_a_quarter_of_its_weights(tmp_path):
    model = tmp_path / "mlp.onnx"
    weight_bytes = _mlp_model(model, layers=12)  # 3 MiB of weights
    target = _mesh_target(tmp_path, 3, 2, 131072)  # 768 KiB of core memory in all
    assert 6 * 131072 <= weight_bytes // 4
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)}
    prog, report = _compile_and_run(tmp_path, model, target, feeds)
    assert open(prog).readline().startswith(".package")
    assert report["programs"] >= 4  # at least 3 MiB / 768 KiB
    per = report["per_program"]
    assert report["cycles"] == sum(p["cycles"] for p in per)
    assert all(p["weight_load_bytes"] > 0 and p["host_in_bytes"] > 0 and p["host_out_bytes"] > 0 for p in per)
    assert sum(p["weight_load_bytes"] for p in per) >= weight_bytes
    # the mesh runs' NoC traffic, per program and in total (a 3 x 2 mesh of split layers)
    assert report["noc_byte_hops"] == sum(p["noc_byte_hops"] for p in per) > 0
    assert report["noc_bytes"] == sum(p["noc_bytes"] for p in per) > 0
    _check_outputs(tmp_path, model, feeds)


def test_bert_runs_as_a_package(tmp_path):
    model = model_zoo.get_model("bert_2layer")
    target = _mesh_target(tmp_path, 2, 1, 262144)  # does not hold the whole model
    feeds = model_zoo.sample_inputs("bert_2layer")
    _, report = _compile_and_run(tmp_path, model, target, feeds, model_zoo.input_shape_args("bert_2layer"))
    assert report["programs"] >= 2
    _check_outputs(tmp_path, model, feeds)


def test_greedy_within_one_program_of_optimal(tmp_path):
    from nnx.split_fuse.chain import main_function

    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=6, every=1)
    module = api.import_onnx(str(model), None, None)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    check = FitChecker(main_function(module, "test"), _mesh_target(tmp_path, 3, 2, 131072))
    # from one op per program: every fusion has something to do
    chain = split_until_fit(check, [(i, i + 1) for i in range(len(check.ops))], "key-nodes", "test")
    counts = {}
    for strategy in ("pairwise", "greedy", "bidirectional", "optimal"):
        out = fuse_chain(Fuser(check, FusionWindow()), chain, strategy)
        assert [r for r in out if not check.fits(r)] == []
        assert out[0][0] == 0 and out[-1][1] == len(check.ops)
        assert all(a[1] == b[0] for a, b in zip(out, out[1:]))
        counts[strategy] = len(out)
    assert counts["optimal"] <= min(counts.values())
    assert counts["greedy"] <= counts["optimal"] + 1
    assert counts["optimal"] < len(chain)
    # least estimated time: never worse than greedy's chain by the same estimate
    from nnx.split_fuse.fuse import program_time

    fuser = Fuser(check, FusionWindow())
    timed = fuse_chain(fuser, chain, "optimal", objective="time")
    greedy = fuse_chain(fuser, chain, "greedy")
    assert all(check.fits(r) for r in timed)
    assert sum(program_time(fuser, r) for r in timed) <= sum(program_time(fuser, r) for r in greedy)
    # key-nodes splitting of the whole function reaches chains that compile too
    whole = split_until_fit(check, [(0, len(check.ops))], "key-nodes", "test")
    assert all(check.fits(r) for r in whole) and len(whole) >= counts["optimal"]


def test_op_too_big_for_the_mesh_is_one_line_exit_1_no_files(tmp_path, capsys):
    from nnx.tools.nnx_compile import main as compile_main

    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=2, width=1024)  # 4 MiB per Gemm
    target = _mesh_target(tmp_path, 2, 2, 131072)
    prog = tmp_path / "prog.s"
    assert compile_main([str(model), "--target", target, "-o", str(prog)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "does not fit the whole mesh" in err and "gemm" in err, err
    assert not any(p.name.startswith("prog") for p in tmp_path.iterdir())


# ---------------------------------------------------------------- --plot and --trace


@pytest.fixture(scope="module")
def plotted_package(tmp_path_factory):
    """A 4-layer MLP (1 MiB of weights) as a package on a 3 x 2 mesh of 128 KiB cores,
    run with --report, --plot and --trace."""
    tmp_path = tmp_path_factory.mktemp("plot")
    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=4, every=2)
    target = _mesh_target(tmp_path, 3, 2, 131072)
    feeds = {"x": np.random.default_rng(2).standard_normal((1, 256)).astype(np.float32)}
    _, report = _compile_and_run(tmp_path, model, target, feeds,
                                 run_extra=("--plot", str(tmp_path / "t.png"), "--trace", str(tmp_path / "t.json")))
    _check_outputs(tmp_path, model, feeds)
    return tmp_path, report


def _report_intervals(p):
    """(part, start, end) of one program of the report, recomputed from its fields."""
    t, out = p["start_cycle"], []
    for part in ("weight_load", "host_in", "mesh", "host_out"):
        n = p[f"{part}_cycles"]
        out.append((part, t, t + n))
        t += n
    return out


def test_package_report_fields(plotted_package):
    _, report = plotted_package
    per = report["per_program"]
    assert report["programs"] == len(per) >= 2
    t = 0
    for p in per:
        assert p["start_cycle"] == t
        assert p["cycles"] == p["weight_load_cycles"] + p["host_in_cycles"] + p["mesh_cycles"] + p["host_out_cycles"]
        assert p["host_cycles"] == p["host_in_cycles"] + p["host_out_cycles"]
        assert p["end_cycle"] == t + p["cycles"]
        assert p["weight_load_bytes"] > 0 and p["host_in_bytes"] >= 1024 and p["host_out_bytes"] >= 1024
        t = p["end_cycle"]
    assert report["cycles"] == t
    assert report["weight_load_bytes"] == sum(p["weight_load_bytes"] for p in per) >= 4 * 256 * 256 * 4
    # a program reads back what an earlier one parked (or a model input)
    parked = {"x"}
    for p in per:
        assert set(p["inputs"]) <= parked
        parked |= set(p["outputs"])


def report_runs(report):
    """The `ProgramRun`s of a package report (its fields, as `ProgramRun.report` lists them)."""
    import dataclasses

    from nnx.sim.package import ProgramRun

    names = {f.name for f in dataclasses.fields(ProgramRun)}
    return [ProgramRun(**{k: v for k, v in p.items() if k in names}) for p in report["per_program"]]


def test_package_plot_draws_the_report_intervals(plotted_package):
    """The figure's bars, per part, are exactly the report's intervals (recomputed
    from its fields); every lane is labelled and every part is in the legend."""
    from test_figures import bar_spans

    from nnx.sim.package_plot import LANES, package_figure

    tmp_path, report = plotted_package
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = package_figure(report_runs(report), "prog.s on nnx-mesh-3x2")
    (ax,) = fig.axes
    assert fig._suptitle.get_text() == "prog.s on nnx-mesh-3x2"
    assert ax.get_xlabel() == "time (cycles)" and ax.get_ylabel() == "lane"
    assert [t.get_text() for t in ax.get_yticklabels()] == list(LANES)
    bars = {}
    for c in ax.collections:
        bars.setdefault(c.get_label().lstrip("_").replace(" (odd)", ""), []).extend(bar_spans(c))
    per = report["per_program"]
    for part in ("weight_load", "host_in", "mesh", "host_out"):
        expect = sorted((s, e) for p in per for q, s, e in _report_intervals(p) if q == part and e > s)
        assert sorted(bars[part.replace("_", " ")]) == expect, part
    assert sorted(bars["program"]) == [(p["start_cycle"], p["end_cycle"]) for p in per]
    assert ax.get_xlim() == (0, report["cycles"])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["program", "weight load", "host in", "mesh", "host out", "host step"]


def test_package_trace(plotted_package):
    tmp_path, report = plotted_package
    trace = json.loads((tmp_path / "t.json").read_text())
    ev = trace["traceEvents"]
    us = 1e-3  # the test target runs at 1 GHz
    meshes = sorted((e for e in ev if e.get("cat") == "mesh"), key=lambda e: e["ts"])
    per = report["per_program"]
    assert len(meshes) == len(per)
    for e, p in zip(meshes, per):
        start = p["start_cycle"] + p["weight_load_cycles"] + p["host_in_cycles"]
        assert e["ts"] == pytest.approx(start * us) and e["dur"] == pytest.approx(p["mesh_cycles"] * us)
    parked = [e for e in ev if e.get("cat") == "host_out"]
    assert [e["args"]["tensors"] for e in parked] == [p["outputs"] for p in per]
    # per-core events of every program, inside that program's mesh run
    names = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert "core 0" in names.values() and list(names.values()).count("core 0") == 1
    core_events = [e for e in ev if e["ph"] == "X" and names.get(e["pid"], "").startswith("core")]
    for e, p in zip(meshes, per):
        inside = [c for c in core_events if e["ts"] - 1e-9 <= c["ts"] <= e["ts"] + e["dur"] + 1e-9]
        assert inside, p["program"]
    assert len(core_events) == sum(1 for c in core_events if any(
        m["ts"] - 1e-9 <= c["ts"] <= m["ts"] + m["dur"] + 1e-9 for m in meshes))


def test_package_run_failure_writes_no_plot(plotted_package, capsys):
    from nnx.tools.nnx_run import main as run_main

    tmp_path, _ = plotted_package
    out = tmp_path / "fail"
    out.mkdir()
    rc = run_main([str(tmp_path / "prog.s"), "--plot", str(out / "t.png"), "--trace", str(out / "t.json"),
                   "--report", str(out / "r.json")])  # no --input x=...
    assert rc == 1
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert list(out.iterdir()) == []


# ---------------------------------------------------------------- nnx-compile --pipeline


def test_compile_pipeline_chain_becomes_the_package(tmp_path):
    """A --pipeline ending in subgraph-fuse{strategy=...} with a mesh target: each
    subgraph is one program; greedy has at most one program more than optimal, and
    both packages match onnxruntime."""
    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=6, every=1)
    target = _mesh_target(tmp_path, 3, 2, 131072)
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 256)).astype(np.float32)}
    programs = {}
    for strategy in ("greedy", "optimal"):
        d = tmp_path / strategy
        d.mkdir()
        pipe = f"builtin.module({GRAPH_PASSES[15:-1]},subgraph-split,subgraph-fuse{{strategy={strategy}}})"
        _, report = _compile_and_run(d, model, target, feeds, ("--pipeline", pipe))
        _check_outputs(d, model, feeds)
        programs[strategy] = report["programs"]
    assert programs["greedy"] <= programs["optimal"] + 1
    assert programs["optimal"] >= 3  # 1.5 MiB of weights on 768 KiB of cores


@pytest.mark.parametrize("fuse, message", [
    ("subgraph-fuse{strategy=random}", "unknown strategy 'random'"),
    ("subgraph-fuse{min-weights=10 max-weights=5}", "impossible window for weights: min-weights=10 > max-weights=5"),
])
def test_compile_bad_fuse_options_one_line_exit_1_no_files(tmp_path, capsys, fuse, message):
    from nnx.tools.nnx_compile import main as compile_main

    model = tmp_path / "mlp.onnx"
    _mlp_model(model, layers=2)
    target = _mesh_target(tmp_path, 3, 2, 131072)
    out = tmp_path / "out"
    out.mkdir()
    rc = compile_main([str(model), "--target", target, "-o", str(out / "prog.s"),
                       "--pipeline", f"builtin.module(subgraph-split,{fuse})"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1 and message in err, err
    assert list(out.iterdir()) == []


def test_outputs_that_are_inputs_copies_or_constants(tmp_path):
    """Model outputs no program computes under their own name -- an Identity of the
    input, a second name of a hidden state, a Constant -- come out of the package
    (aliases and `.host` tensors in the manifest) and match onnxruntime."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    ws = [numpy_helper.from_array((rng.standard_normal((256, 256)) / 16).astype(np.float32), f"W{k}") for k in (0, 1)]
    nodes = [helper.make_node("Gemm", ["x", "W0"], ["g0"]), helper.make_node("Relu", ["g0"], ["h0"]),
             helper.make_node("Identity", ["h0"], ["h0copy"]), helper.make_node("Gemm", ["h0", "W1"], ["y"]),
             helper.make_node("Identity", ["x"], ["xcopy"]),
             helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.arange(4, dtype=np.float32)))]

    def vi(n, shape):
        return helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)

    g = helper.make_graph(nodes, "edge", [vi("x", [1, 256])],
                          [vi("h0", [1, 256]), vi("h0copy", [1, 256]), vi("y", [1, 256]), vi("xcopy", [1, 256]),
                           vi("c", [4])], ws)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = tmp_path / "edge.onnx"
    onnx.save(m, str(model))
    feeds = {"x": rng.standard_normal((1, 256)).astype(np.float32)}
    # one 256 KiB layer per program; then the whole model in one program, still a
    # package since no mesh program computes `c`
    for mesh, programs in (((2, 2, 131072), 2), ((4, 4, 524288), 1)):
        d = tmp_path / f"{mesh[0]}x{mesh[1]}"
        d.mkdir()
        prog, report = _compile_and_run(d, model, _mesh_target(d, *mesh), feeds)
        assert report["programs"] == programs and ".host c " in prog.read_text()
        _check_outputs(d, model, feeds)


def test_bert_hidden_states_package_on_a_quarter_of_its_weights(tmp_path):
    """The acceptance case: a transformers BERT exported with every layer's hidden
    state as an output runs as a package on a mesh whose core memory is at most a
    quarter of its weights, or twice its largest op's weights (here the word
    embedding, above the quarter); outputs within 1e-4 of onnxruntime."""
    from test_subgraph_split import bert_hidden_feeds, bert_hidden_states_model

    from nnx.split_fuse.chain import main_function, scheduled_ops
    from nnx.split_fuse.fit import range_weights

    model = bert_hidden_states_model(layers=2, hidden=64)
    feeds = bert_hidden_feeds()
    shapes = {k: v.shape for k, v in feeds.items()}
    module = api.import_onnx(str(model), shapes, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    ops = scheduled_ops(main_function(module, "test").body.block)
    weights = range_weights(ops, (0, len(ops)))
    largest = max(range_weights(ops, (i, i + 1)) for i in range(len(ops)))
    budget = weights // 4 if largest <= weights // 4 else 2 * largest
    core = budget // 2 // 4096 * 4096
    assert 2 * core <= budget and largest > weights // 4
    extra = [a for k, s in shapes.items() for a in ("--input-shape", f"{k}={'x'.join(map(str, s))}")]
    _, report = _compile_and_run(tmp_path, model, _mesh_target(tmp_path, 2, 1, core), feeds, extra)
    assert report["programs"] >= 2
    _check_outputs(tmp_path, model, feeds)
