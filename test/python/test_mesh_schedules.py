"""The mesh schedules (docs/mesh.md, "Schedules"): the latency schedule against
onnxruntime and against today's one-stage-per-core schedule, on small CNNs and the
4 x 4 test mesh; nnx-compile's --objective."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import model_zoo
from nnx import api
from nnx.mesh.compile import compile_for_mesh
from nnx.mesh.latency import fold, snake
from nnx.sim.asm_mesh import read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from test_lower_to_mesh import GRAPH_PASSES, TARGET, _row_split_cnn, _run_mesh


def _graph(path):
    module = api.import_onnx(str(path), None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    return module


def _check(path, feeds, tmp_path):
    """Both schedules' outputs against onnxruntime; their (cores, cycles)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path))
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    out = {}
    for schedule in ("stages", "latency"):
        comp = compile_for_mesh(_graph(path), TARGET, "bisect", schedule=schedule)
        d = tmp_path / schedule
        d.mkdir()
        res = _run_mesh(comp, feeds, d)
        for name, ref in refs.items():
            np.testing.assert_allclose(res.outputs[name], ref, rtol=0, atol=1e-4)
        out[schedule] = (len(comp.program.cores), res.latency_cycles, comp)
    return out


def test_latency_schedule_spreads_tiny_resnet_and_beats_stages(tmp_path):
    name = "tiny_resnet"
    got = _check(model_zoo.get_model(name), model_zoo.sample_inputs(name), tmp_path)
    (c_st, t_st, _), (c_lat, t_lat, comp) = got["stages"], got["latency"]
    assert c_lat >= 12 and c_lat > c_st  # (nearly) every core works
    assert t_lat < 0.8 * t_st, (t_lat, t_st)
    # each core holds parts of several layers: the folded stages are cores
    assert max(len({i for i, _ in s.items}) for s in comp.plan.stages) > 1


def test_latency_schedule_row_split_cnn_matches_onnxruntime(tmp_path):
    """Strided and padded convs, depthwise conv, pools, batch norm, a residual add
    and an SE gate, split by rows with halos on every core, two outputs."""
    path = tmp_path / "rows.onnx"
    _row_split_cnn(str(path))
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    got = _check(path, feeds, tmp_path)
    comp = got["latency"][2]
    # row-split layers over the whole mesh (a core full of planned bytes passes a
    # part on to the next, so two parts may share one)
    plan = comp.plan
    rows = [i for i, k in enumerate(plan.kinds) if k == "rows" and plan.splits[i].k == 16]
    assert len(rows) >= 2
    for i in rows:
        assert len({plan.where[(i, j)] for j in range(16)}) >= 12


def test_snake_visits_every_core_by_neighbours():
    path = snake(5, 3)
    assert sorted(path) == list(range(15))
    for a, b in zip(path, path[1:]):
        assert abs(a % 5 - b % 5) + abs(a // 5 - b // 5) == 1


def test_fold_puts_parts_of_one_op_on_distinct_cores():
    from nnx.mesh.latency import latency_share
    from nnx.mesh.partition import plan_partition

    module = _graph(model_zoo.get_model("tiny_resnet"))
    main = next(op for op in module.ops if op.sym_name.data == "main")
    from nnx.dialects.graph import ConstantOp
    from xdsl.dialects import func

    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    plan = plan_partition(ops, 16, 1 << 19, 1.0, 0.6, list(main.body.block.last_op.operands), latency_share)
    folded, cores = fold(plan, 4, 4, 0.6 * (1 << 19))
    assert len(set(cores)) == len(cores) == len(folded.stages)
    for i in range(len(ops)):
        parts = [s for (op, _), s in folded.where.items() if op == i]
        assert len(parts) == len(set(parts))  # no two parts of an op on one core
    # graph order on every core (the deadlock-freedom argument)
    for s in folded.stages:
        ops_in = [i for i, _ in s.items if i >= 0]
        assert ops_in == sorted(ops_in)


@pytest.mark.parametrize("objective", ["latency", "throughput"])
def test_nnx_compile_objective(objective, tmp_path):
    """Each objective's program against onnxruntime, one inference and every
    inference of a stream of 4; the latency program spreads over (nearly) every
    core, the throughput program pipelines (an inference every fewer cycles than
    one inference takes)."""
    import onnxruntime as ort

    from nnx.tools.nnx_compile import main

    name = "tiny_resnet"
    path = str(model_zoo.get_model(name))
    out = tmp_path / "prog.s"
    assert main([path, "--target", TARGET, "-o", str(out), "--batch", "1", "--objective", objective]) == 0
    feeds = model_zoo.sample_inputs(name)
    prog = read_mesh_program(str(out))
    one = MeshSimulator(prog, load_target(TARGET)).run(feeds)
    stream = MeshSimulator(prog, load_target(TARGET)).run(feeds, stream=4)
    sess = ort.InferenceSession(path)
    for o, ref in zip(sess.get_outputs(), sess.run(None, feeds)):
        np.testing.assert_allclose(one.outputs[o.name], ref, rtol=0, atol=1e-4)
        for k in range(4):
            np.testing.assert_allclose(stream.outputs[o.name][k], ref, rtol=0, atol=1e-4)
    if objective == "latency":
        assert len(prog.cores) >= 12
    else:
        assert stream.cycles_per_inference < 0.6 * one.latency_cycles


def test_nnx_compile_bad_objective_is_one_line(tmp_path, capsys):
    from nnx.tools.nnx_compile import main

    assert main([str(model_zoo.get_model("tiny_resnet")), "--target", TARGET, "-o", str(tmp_path / "p.s"),
                 "--batch", "1",
                 "--objective", "speed"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--objective" in err, err
    assert not (tmp_path / "p.s").exists()


def test_reused_activation_memory_is_smaller_and_computes_the_same(tmp_path):
    """lower-to-chip{reuse=true} on a CNN whose 256 KiB activations exceed the
    default target's caches: intermediates share storage over time (chip-allocate
    `reuse`; one that stays in a cache takes none), the dependencies then come from
    the addresses; the program is smaller and still matches onnxruntime. With a
    limit it keeps within it, reusing memory freed long ago first."""
    import onnxruntime as ort

    path = str(tmp_path / "rows.onnx")
    _row_split_cnn(path)
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    base = "graph-fold-constants,canonicalize,graph-fuse,dce,"

    def storage(opts):
        prog = api.compile(path, None, base + f"lower-to-chip{{{opts}}}")
        return prog, prog.program.storage_bytes

    _, plain = storage("schedule=false")
    reused, least = storage("schedule=false reuse=true")
    assert least < 0.5 * plain, (least, plain)
    mid = (plain + least) // 2
    limited, within = storage(f"schedule=false reuse=true reuse-limit={mid}")
    scheduled, _ = storage("reuse=true")
    assert least <= within <= mid
    refs = ort.InferenceSession(path).run(["res", "y"], feeds)
    for prog in (reused, limited, scheduled):
        res = api.simulate(prog, feeds)
        for name, ref in zip(["res", "y"], refs):
            np.testing.assert_allclose(res.outputs[name], ref, rtol=0, atol=1e-4)


def test_latency_cores_reusing_received_memory_match_onnxruntime(tmp_path, monkeypatch):
    """The latency schedule reuses a core's memory only as far as it must to fit;
    forced to reuse as soon as memory is free (received messages included: each
    RECV then waits for the units done with its memory, nnx/mesh/stitch.py), every
    core's storage shrinks and the outputs still match onnxruntime."""
    import onnxruntime as ort

    from nnx.mesh import compile as mesh_compile

    path = tmp_path / "rows.onnx"
    _row_split_cnn(str(path))
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 128, 128)).astype(np.float32)}
    refs = ort.InferenceSession(str(path)).run(["res", "y"], feeds)
    tgt = load_target(TARGET)

    def compiled(forced):
        if forced:
            lower = mesh_compile._lower_stage
            monkeypatch.setattr(mesh_compile, "_lower_stage",
                                lambda mod, t, target, schedule=True, reuse=0, received=(), in_place=False:
                                lower(mod, t, target, schedule, 1 if reuse else 0, received, in_place))
        module = _graph(path)
        return mesh_compile._compile_latency(mesh_compile.main_function(module), tgt, TARGET, 0.6)

    plain, reused = compiled(False), compiled(True)
    def storage(comp):
        return sum(sec.program.storage_bytes for sec in comp.program.cores.values())

    assert storage(reused) < 0.8 * storage(plain)
    # some RECV waits for the units that used its memory before
    assert any(ins.mnemonic == "WAIT" and (ins.token or "").startswith("mesh_free_")
               for sec in reused.program.cores.values() for ins in sec.program.instrs)
    res = _run_mesh(reused, feeds, tmp_path)
    for name, ref in zip(["res", "y"], refs):
        np.testing.assert_allclose(res.outputs[name], ref, rtol=0, atol=1e-4)


def _tiny_resnet_both_ways(tmp_path, monkeypatch, module, rule: str) -> dict:
    """tiny_resnet under the latency schedule with `module.rule` False, then True:
    {setting: (compilation, run)}, each run's outputs within 1e-4 of onnxruntime's."""
    import onnxruntime as ort

    path, feeds = model_zoo.get_model("tiny_resnet"), model_zoo.sample_inputs("tiny_resnet")
    sess = ort.InferenceSession(str(path))
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    out = {}
    for setting in (False, True):
        monkeypatch.setattr(module, rule, setting)
        comp, res = _latency_run(path, feeds, tmp_path / f"{rule}_{setting}")
        for name, ref in refs.items():
            np.testing.assert_allclose(res.outputs[name], ref, rtol=0, atol=1e-4)
        out[setting] = (comp, res)
    return out


def test_received_pieces_in_place_compute_the_same_with_less(tmp_path, monkeypatch):
    """The latency schedule writes received pieces into the value they make up
    (chip-lower's concat_in_place: channel pieces as byte ranges, row bands as
    strided views; docs/mesh.md, "Received pieces in place") instead of receiving
    them apart and copying them together: against the copy, on the same plan of
    tiny_resnet, the same outputs (onnxruntime's within 1e-4), fewer instructions,
    no more cycles, and row bands received through strides."""
    from nnx.mesh import compile as mesh_compile
    from nnx.sim.isa_mesh import RECV, noc_tile

    got = {}
    for in_place, (comp, res) in _tiny_resnet_both_ways(tmp_path, monkeypatch, mesh_compile,
                                                        "LATENCY_IN_PLACE").items():
        instrs = sum(len(sec.program.instrs) for sec in comp.program.cores.values())
        strided = sum(noc_tile(ins).strides is not None for sec in comp.program.cores.values()
                      for ins in sec.program.instrs if ins.mnemonic == RECV)
        got[in_place] = (instrs, res.latency_cycles, comp.plan.stages, strided)
    (copy_n, copy_t, copy_plan, copy_strided), (n, t, plan, strided) = got[False], got[True]
    assert copy_strided == 0 < strided
    assert [s.items for s in plan] == [s.items for s in copy_plan]  # the same parts on the same cores
    assert n < copy_n, (n, copy_n)
    assert t <= copy_t, (t, copy_t)


def _one_core_concat_programs(tmp_path, name, nodes, shapes, out):
    """Model x -> y of `nodes` (inputs `shapes`, output y of shape `out`) lowered on one
    core with `concat-in-place` false and true: both programs, each checked to compute
    onnxruntime's y (within 1e-6)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh)
                                           for n, sh in shapes.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    path = str(tmp_path / f"{name}.onnx")
    onnx.save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)]), path)
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(sh).astype(np.float32) for n, sh in shapes.items()}
    ref = ort.InferenceSession(path).run(["y"], feeds)[0]
    progs = {}
    for in_place in ("false", "true"):
        prog = api.compile(path, None, f"lower-to-chip{{schedule=false concat-in-place={in_place}}}")
        np.testing.assert_allclose(api.simulate(prog, feeds).outputs["y"], ref, rtol=0, atol=1e-6)
        progs[in_place] = prog.program
    return progs


@pytest.mark.parametrize("axis", [1, 2])
def test_concat_in_place_on_one_core_reads_its_inputs_as_views(axis, tmp_path):
    """lower-to-chip{concat-in-place=true} on one core: a concat of the program's
    inputs along channels (contiguous ranges) emits no copy, the inputs are loaded
    straight into the result's buffer; along rows it keeps its copy (a strided
    range is only for arguments written while the program runs, a mesh core's
    received pieces: an `.input` is dense). Both compute what onnxruntime does."""
    from onnx import helper

    shapes = {"a": [1, 2, 4, 8], "b": [1, 3, 4, 8]} if axis == 1 else {"a": [1, 3, 2, 8], "b": [1, 3, 5, 8]}
    out = [1, 5, 4, 8] if axis == 1 else [1, 3, 7, 8]
    nodes = [helper.make_node("Concat", ["a", "b"], ["c"], axis=axis), helper.make_node("Relu", ["c"], ["y"])]
    progs = _one_core_concat_programs(tmp_path, "concat", nodes, shapes, out)
    a, b = (next(s.tile for s in progs["true"].inputs if s.name == n) for n in "ab")
    if axis == 1:
        assert len(progs["true"].instrs) < len(progs["false"].instrs)
        assert b.offset == a.offset + a.nbytes  # one buffer: b right after a
    else:
        assert len(progs["true"].instrs) == len(progs["false"].instrs)


def test_nested_concat_in_place_places_every_received_piece(tmp_path):
    """A concat of in-place concats is in place too (a tiled value's channel groups
    joined, each group's row bands joined: nnx/mesh/core_graph.py `tile_window`),
    and a concat with an operand computed on the core places the others and copies
    only that one: on one core, concat(concat(a, b), relu(x), c) along channels
    holds a, b and c at their places in one buffer, relu(x) copied between them;
    the same outputs as onnxruntime and as the program that copies every piece."""
    from onnx import helper

    shapes = {"a": [1, 2, 4, 8], "b": [1, 3, 4, 8], "x": [1, 1, 4, 8], "c": [1, 2, 4, 8]}
    nodes = [helper.make_node("Concat", ["a", "b"], ["ab"], axis=1), helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Concat", ["ab", "r", "c"], ["abrc"], axis=1), helper.make_node("Relu", ["abrc"], ["y"])]
    progs = _one_core_concat_programs(tmp_path, "nested", nodes, shapes, [1, 8, 4, 8])
    tiles = {s.name: s.tile for s in progs["true"].inputs}
    plane = 4 * 8 * 4  # bytes of one channel
    assert tiles["b"].offset == tiles["a"].offset + 2 * plane
    assert tiles["c"].offset == tiles["a"].offset + 6 * plane  # after relu(x)'s channel
    assert tiles["x"].offset not in range(tiles["a"].offset, tiles["a"].offset + 8 * plane)
    assert len(progs["true"].instrs) < len(progs["false"].instrs)


def _ops(module):
    from nnx.dialects.graph import ConstantOp
    from xdsl.dialects import func

    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]


def test_latency_cost_model_aligns_residual_producers():
    """latency_shares gives both producers of a residual add the same channel
    parts, so that the add follows them piece by piece."""
    from nnx.dialects.graph import AddOp
    from nnx.mesh.latency import latency_shares

    ops = _ops(_graph(model_zoo.get_model("tiny_resnet")))
    shares = latency_shares(ops, load_target(TARGET))
    index = {id(op): i for i, op in enumerate(ops)}
    adds = [op for op in ops if isinstance(op, AddOp) and all(id(v.owner) in index for v in op.operands)]
    assert adds
    for add in adds:
        assert len({shares.channels[index[id(v.owner)]] for v in add.operands}) == 1


def test_latency_cost_model_splits_a_gemm_bound_by_its_weights(tmp_path):
    """A classifier gemm (1 x 512 by 512 x 1000) has few MACs but 2 MB of weights to
    load: latency_shares splits it by its one-core cycles (the weights over the
    core's memory bandwidth) into many more parts than the MAC floor gives."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from nnx.mesh.latency import latency_share, latency_shares
    from nnx.mesh.partition import op_cost

    w = np.random.default_rng(0).standard_normal((512, 1000)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000])],
                              [numpy_helper.from_array(w, "w")])
    path = tmp_path / "gemm.onnx"
    onnx.save(helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    (gemm,) = _ops(_graph(path))
    tgt = load_target(str(Path(__file__).resolve().parents[2] / "targets" / "mesh.toml"))
    n = tgt.mesh.width * tgt.mesh.height
    shares = latency_shares([gemm], tgt)
    assert shares.rows[0] >= 8 * max(1, latency_share(op_cost(gemm), op_cost(gemm), n, 1.0))


def test_op_too_big_for_the_mesh_names_its_onnx_node(tmp_path, capsys):
    """subgraph-split's error for one op larger than the whole mesh names the ONNX
    node (graph.gemm 'big_gemm'), one line, nothing written."""
    from nnx.tools.nnx_compile import main
    from test_lower_to_mesh import _big_gemm_model

    path = str(tmp_path / "big.onnx")
    _big_gemm_model(path, 1500)
    out = tmp_path / "prog.s"
    pipe = f'builtin.module(graph-fold-constants,subgraph-split{{target="{TARGET}"}},lower-to-mesh{{target="{TARGET}"}})'
    assert main([path, "--target", TARGET, "-o", str(out), "--pipeline", pipe]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "subgraph-split: op graph.gemm 'big_gemm' does not fit the whole mesh even alone" in err, err
    assert not out.exists()


def test_cores_lowered_side_by_side_are_the_same_bytes(tmp_path, monkeypatch):
    """The latency schedule's core programs lowered by forked worker processes
    (nnx/mesh/core_lowering.py, over nnx/executor.py) are the same program text and
    weights file as lowered one after another in this process."""
    from nnx import executor
    from nnx.passes.lower_to_mesh import save_mesh_program

    calls = []
    run_points = executor.run_points
    monkeypatch.setattr(executor, "run_points", lambda *a, **k: calls.append(k) or run_points(*a, **k))
    texts = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("NNX_THREADS", workers)
        comp = compile_for_mesh(_graph(model_zoo.get_model("tiny_resnet")), TARGET, "bisect", schedule="latency")
        d = tmp_path / workers
        d.mkdir()
        save_mesh_program(comp, str(d / "prog.s"))
        texts[workers] = ((d / "prog.s").read_text(), (d / "prog.data").read_bytes())
        assert len(calls) == (workers == "2")  # the pool lowered the 15 cores
    assert calls[0]["fork"]
    assert texts["1"] == texts["2"]


def test_core_lowering_pool_raises_the_lowering_error_and_stops_early():
    """A lowering that fails in a forked worker is lowered again in the compiling
    process, which raises its error (an exception carrying IR may not pickle); a
    caller that stops after the first program (an overflowing core) leaves no work
    behind."""
    from nnx.mesh.core_lowering import MIN_PARALLEL, lower_cores

    def fake_lower(s):
        if s == 3:
            raise ValueError(f"core {s} does not lower")
        return ("program", s)

    jobs = [fake_lower] * (MIN_PARALLEL + 2)
    good = [s for s in range(len(jobs)) if s != 3]
    assert sorted(lower_cores(jobs, good, workers=2)) == [(s, ("program", s)) for s in good]
    with pytest.raises(ValueError, match="core 3 does not lower"):
        list(lower_cores(jobs, range(len(jobs)), workers=2))
    it = lower_cores(jobs, good, workers=2)
    assert next(it)[1][0] == "program"
    it.close()  # the pool is shut down, its queued jobs dropped
    assert sorted(lower_cores(jobs, good, workers=1)) == sorted((s, ("program", s)) for s in good)


def test_throughput_pipeline_beats_the_proportional_schedule_in_a_stream(tmp_path):
    """The searched layer pipeline (nnx/mesh/pipeline_search.py) against the first
    throughput schedule (`proportional`) on tiny_resnet, a stream of 4 distinct
    inputs: every inference within 1e-4 of onnxruntime, fewer cycles per inference;
    every core runs parts of one group of consecutive layers."""
    import onnxruntime as ort

    from nnx.passes.lower_to_mesh import save_mesh_program

    name = "tiny_resnet"
    path = model_zoo.get_model(name)
    base = model_zoo.sample_inputs(name)
    rng = np.random.default_rng(3)
    feeds = {k: np.stack([v] + [rng.standard_normal(v.shape).astype(v.dtype) for _ in range(3)])
             for k, v in base.items()}
    sess = ort.InferenceSession(str(path))
    per = {}
    for schedule in ("throughput", "proportional"):
        comp = compile_for_mesh(_graph(path), TARGET, "bisect", schedule=schedule)
        asm = str(tmp_path / f"{schedule}.s")
        save_mesh_program(comp, asm)
        res = MeshSimulator(read_mesh_program(asm), load_target(TARGET)).run(feeds, stream=4)
        for k in range(4):
            refs = sess.run(None, {n: v[k] for n, v in feeds.items()})
            for o, ref in zip(sess.get_outputs(), refs):
                np.testing.assert_allclose(res.outputs[o.name][k], ref, rtol=0, atol=1e-4)
        per[schedule] = (res.cycles_per_inference, comp)
    (pipe, comp), (prop, _) = per["throughput"], per["proportional"]
    assert pipe < 0.8 * prop, (pipe, prop)
    # every core runs parts of one group's layers; the groups use (nearly) every core
    groups = comp.pipeline
    group_of = {i: g for g, (a, b, _) in enumerate(groups.groups) for i in range(a, b)}
    assert len(groups.groups) >= 3 and len(comp.program.cores) >= 12
    assert sum(n for _, _, n in groups.groups) <= 16
    for s in comp.plan.stages:  # (a stage of whole ops the partitioner packed may span two)
        assert len({group_of[i] for i, part in s.items if i >= 0 and part is not None}) <= 1, s.items
    # residuals are forwarded: no op reads a result from before the group before its own
    index = {id(op): i for i, op in enumerate(comp.plan.ops)}
    for i, op in enumerate(comp.plan.ops):
        for v in op.operands:
            if id(v.owner) in index:
                assert group_of[i] - group_of[index[id(v.owner)]] <= 1


def _latency_run(path, feeds, d):
    """(compilation, run) of the model at `path` under the latency schedule on the
    test mesh, its files in the new directory `d`."""
    comp = compile_for_mesh(_graph(path), TARGET, "bisect", schedule="latency")
    d.mkdir()
    return comp, _run_mesh(comp, feeds, d)


def test_messages_on_the_queue_that_touches_them(tmp_path, monkeypatch):
    """stitch.add_messages puts a RECV on the DMA queue of the first instruction
    that touches its tile and, under the latency schedule, a SEND on the queue of
    its tile's last write (`NOC_ON_TOUCHING_UNIT`): on tiny_resnet, RECVs and
    SENDs on both DAU queues, the same outputs (onnxruntime's within 1e-4) and
    fewer cycles than with every message on DAU0, where a RECV still waiting
    held up the loads behind it (4,808 against 5,068 when written)."""
    from nnx.mesh import stitch
    from nnx.sim.isa_mesh import RECV, SEND

    got = {}
    for touching, (comp, res) in _tiny_resnet_both_ways(tmp_path, monkeypatch, stitch,
                                                         "NOC_ON_TOUCHING_UNIT").items():
        queues = {(ins.mnemonic, ins.unit) for sec in comp.program.cores.values() for ins in sec.program.instrs
                  if ins.mnemonic in (RECV, SEND)}
        got[touching] = (queues, res.latency_cycles)
    assert got[False][0] == {(RECV, "DAU0"), (SEND, "DAU0")}
    assert {(RECV, "DAU1"), (SEND, "DAU1")} <= got[True][0]
    assert got[True][1] < got[False][1], (got[True][1], got[False][1])


def _weights(rng):
    """A maker of named float32 initializers scaled by their fan-in."""
    from onnx import numpy_helper

    def t(name, *dims):
        scale = 1.0 / np.sqrt(np.prod(dims[1:]))
        return numpy_helper.from_array((rng.standard_normal(dims) * scale).astype(np.float32), name)
    return t


def _save_cnn(path, name, nodes, inits, hw):
    """An opset-17 model of `nodes` from x (1 x 3 x hw x hw) to y (1 x 10), saved."""
    import onnx
    from onnx import TensorProto, helper

    gr = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def _tile_cnn(path, hw=24, ch=16):
    """A small ResNet-like CNN (3 x 3 convs, a residual block, a strided block with a
    1 x 1 downsampling conv, global pool, classifier) whose convs the latency
    schedule's cost model tiles on the 4 x 4 test mesh."""
    from onnx import helper

    t = _weights(np.random.default_rng(0))
    inits = [t("W0", ch, 3, 3, 3), t("B0", ch), t("W1", ch, ch, 3, 3), t("B1", ch), t("W2", ch, ch, 3, 3), t("B2", ch),
             t("W3", 2 * ch, ch, 3, 3), t("B3", 2 * ch), t("W4", 2 * ch, 2 * ch, 3, 3), t("B4", 2 * ch),
             t("WD", 2 * ch, ch, 1, 1), t("BD", 2 * ch), t("WF", 10, 2 * ch), t("BF", 10)]
    pad = {"pads": [1, 1, 1, 1]}
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], **pad), node("Relu", ["c0"], ["r0"]),
             node("Conv", ["r0", "W1", "B1"], ["c1"], **pad), node("Relu", ["c1"], ["r1"]),
             node("Conv", ["r1", "W2", "B2"], ["c2"], **pad), node("Add", ["c2", "r0"], ["a2"]),
             node("Relu", ["a2"], ["r2"]),
             node("Conv", ["r2", "W3", "B3"], ["c3"], strides=[2, 2], **pad), node("Relu", ["c3"], ["r3"]),
             node("Conv", ["r3", "W4", "B4"], ["c4"], **pad), node("Conv", ["r2", "WD", "BD"], ["d"], strides=[2, 2]),
             node("Add", ["c4", "d"], ["a4"]), node("Relu", ["a4"], ["r4"]),
             node("GlobalAveragePool", ["r4"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "WF", "BF"], ["y"], transB=1)]
    _save_cnn(path, "tiles", nodes, inits, hw)


def _fire_cnn(path, hw=24):
    """A small SqueezeNet-like CNN: a strided 3 x 3 conv, two fire modules (a 1 x 1
    squeeze conv, then 1 x 1 and 3 x 3 expand convs whose results a concat joins
    along the channels), a dropout, a 1 x 1 classifier conv, global pool."""
    from onnx import helper

    t = _weights(np.random.default_rng(2))
    inits = [t("W0", 32, 3, 3, 3), t("B0", 32), t("WF", 10, 128, 1, 1), t("BF", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], strides=[2, 2], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["f0"])]
    cin = 32
    for m in (1, 2):
        inits += [t(f"S{m}", 16, cin, 1, 1), t(f"SB{m}", 16), t(f"E{m}", 64, 16, 1, 1), t(f"EB{m}", 64),
                  t(f"T{m}", 64, 16, 3, 3), t(f"TB{m}", 64)]
        nodes += [node("Conv", [f"f{m - 1}", f"S{m}", f"SB{m}"], [f"s{m}"]), node("Relu", [f"s{m}"], [f"sr{m}"]),
                  node("Conv", [f"sr{m}", f"E{m}", f"EB{m}"], [f"e{m}"]), node("Relu", [f"e{m}"], [f"er{m}"]),
                  node("Conv", [f"sr{m}", f"T{m}", f"TB{m}"], [f"t{m}"], pads=[1, 1, 1, 1]),
                  node("Relu", [f"t{m}"], [f"tr{m}"]), node("Concat", [f"er{m}", f"tr{m}"], [f"f{m}"], axis=1)]
        cin = 128
    nodes += [node("Dropout", ["f2"], ["d"]), node("Conv", ["d", "WF", "BF"], ["cf"]), node("Relu", ["cf"], ["rf"]),
              node("GlobalAveragePool", ["rf"], ["g"]), node("Flatten", ["g"], ["y"])]
    _save_cnn(path, "fire", nodes, inits, hw)


def test_latency_spreads_a_concat_of_channel_parts_over_row_parts(tmp_path, monkeypatch):
    """A concat joining two channel-split convs (a fire module's expand convs) has
    no output axis to split and less work than a part: under the latency schedule
    it is cut by rows as its share of the work asks (it used to run whole on one
    core, which received every channel piece and sent the whole value to every
    reader part), and with `LATENCY_SPREAD_JOINS` it takes its readers' row parts,
    each gathering one band of both inputs: the same outputs (onnxruntime's within
    1e-4) both ways, more parts and fewer cycles with the rule (4,200 against 6,076
    when written)."""
    import onnxruntime as ort

    from nnx.dialects.graph import ConcatOp
    from nnx.mesh import latency

    path = tmp_path / "fire.onnx"
    _fire_cnn(str(path))
    feeds = {"x": np.random.default_rng(3).standard_normal((1, 3, 24, 24)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    got = {}
    for spread in (False, True):  # the default, then the rule
        monkeypatch.setattr(latency, "LATENCY_SPREAD_JOINS", spread)
        comp, res = _latency_run(path, feeds, tmp_path / f"spread_{spread}")
        np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
        plan = comp.plan
        got[spread] = ([(plan.kinds[i], plan.splits[i].k if i in plan.splits else 1)
                        for i, op in enumerate(plan.ops) if isinstance(op, ConcatOp)], res.latency_cycles)
    (joins, cycles), (spread_joins, spread_cycles) = got[False], got[True]
    assert [k for k, _ in joins] == [k for k, _ in spread_joins] == ["rows", "rows"]
    assert all(n > m for (_, n), (_, m) in zip(spread_joins, joins)), got  # the readers' row parts
    assert spread_cycles < cycles, got


def test_latency_tile_splits_match_onnxruntime_and_receive_bands(tmp_path, monkeypatch):
    """Tile splits (rows x output channels, nnx/mesh/tile_splits.py) under the latency
    schedule: convs tiled, one of them reading a tiled value (a product per input
    channel group), the residual adds and relus following tile by tile, the global
    pool by channel groups; each tile part receives a fraction of its input where an output-channel split's parts receive
    all of it; outputs within 1e-4 of onnxruntime with tiles and without (today's
    split, `LATENCY_TILES = False`, which plans no tile)."""
    import onnxruntime as ort

    from nnx.mesh import latency
    from nnx.mesh.core_graph import _Producers, item_reads
    from nnx.mesh.partition import nbytes
    from nnx.mesh.stage_merge import piece_bytes
    from nnx.mesh.tile_splits import TileSplit

    path = tmp_path / "tiles.onnx"
    _tile_cnn(str(path))
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 24, 24)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    plans = {}
    for tiles in (True, False):
        monkeypatch.setattr(latency, "LATENCY_TILES", tiles)
        comp, res = _latency_run(path, feeds, tmp_path / f"tiles_{tiles}")
        np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
        plans[tiles] = comp.plan
    assert "tile" not in plans[False].kinds
    plan = plans[True]
    tiled = [i for i, k in enumerate(plan.kinds) if k == "tile"]
    assert len(tiled) >= 3, plan.kinds
    assert all(plan.splits[i].r > 1 and plan.splits[i].c > 1 for i in tiled)
    prod = _Producers(plan)
    # a tiled conv reading a tiled value, and tiled followers (relu, residual add)
    assert any(isinstance(plan.splits.get(prod.of(plan.ops[i].operands[0])), TileSplit) for i in tiled)
    assert sum(k == "follow" and isinstance(plan.splits[i], TileSplit) for i, k in enumerate(plan.kinds)) >= 3
    # the global pool reads the last tiled value by channel groups (every band of one group)
    assert [plan.ops[i].name for i, k in enumerate(plan.kinds) if k == "groups"] == ["graph.global_average_pool"]
    for i in tiled:
        whole = nbytes(plan.ops[i].operands[0])
        for p in range(plan.splits[i].k):
            got = sum(piece_bytes(plan, pc) for pc in item_reads(plan, prod, (i, p), [])[1])
            assert got <= 0.75 * whole, (plan.ops[i].name, p, got, whole)


def _inverted_cnn(path, hw=24, ch=16, expand=4):
    """A MobileNetV2-like block: a 3 x 3 conv, a 3 x 3 expansion (as in fused
    inverted residuals), a depthwise 3 x 3 conv, a 1 x 1 projection added to the
    block's input, global pool, classifier."""
    from onnx import helper

    t = _weights(np.random.default_rng(0))
    hid = ch * expand

    inits = [t("W0", ch, 3, 3, 3), t("B0", ch), t("WE", hid, ch, 3, 3), t("BE", hid), t("WW", hid, 1, 3, 3),
             t("BW", hid), t("WP", ch, hid, 1, 1), t("BP", ch), t("WF", 10, ch), t("BF", 10)]
    node = helper.make_node
    nodes = [node("Conv", ["x", "W0", "B0"], ["c0"], pads=[1, 1, 1, 1]), node("Relu", ["c0"], ["r0"]),
             node("Conv", ["r0", "WE", "BE"], ["e"], pads=[1, 1, 1, 1]), node("Relu", ["e"], ["re"]),
             node("Conv", ["re", "WW", "BW"], ["w"], group=hid, pads=[1, 1, 1, 1]), node("Relu", ["w"], ["rw"]),
             node("Conv", ["rw", "WP", "BP"], ["p"]), node("Add", ["p", "r0"], ["a"]),
             node("GlobalAveragePool", ["a"], ["g"]), node("Flatten", ["g"], ["f"]),
             node("Gemm", ["f", "WF", "BF"], ["y"], transB=1)]
    _save_cnn(path, "inverted", nodes, inits, hw)


def test_latency_tiles_only_where_every_reader_reads_tiles(tmp_path, monkeypatch):
    """A conv is tiled only when every op reading its value (through relus and adds)
    can read tiles band by band: a depthwise conv cannot (the partitioner would run it
    whole on one core: MobileNetV2 under the latency schedule ran 4.2x slower), so the
    expansion conv before it stays split as before, and the depthwise conv is split;
    outputs within 1e-4 of onnxruntime."""
    import onnxruntime as ort
    from xdsl.dialects import func

    from nnx.dialects.graph import ConstantOp
    from nnx.mesh import latency
    from nnx.mesh.compile import main_function

    path = tmp_path / "inverted.onnx"
    _inverted_cnn(str(path))
    main = main_function(_graph(path))
    ops = [op for op in main.body.block.ops if not isinstance(op, (ConstantOp, func.ReturnOp))]
    tgt = load_target(TARGET)
    expand = next(i for i, op in enumerate(ops) if op.name == "graph.conv" and op.results[0].type.get_shape()[1] == 64)
    depthwise = next(i for i, op in enumerate(ops) if op.name == "graph.conv" and int(op.attr("group", 1)) > 1)
    # the cost model alone would tile the expansion conv
    monkeypatch.setattr(latency, "_reads_tiles", lambda ops, index, j: True)
    assert latency.latency_shares(ops, tgt).tiles[expand] is not None
    monkeypatch.undo()
    assert latency.latency_shares(ops, tgt).tiles[expand] is None
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 3, 24, 24)).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(["y"], feeds)[0]
    comp = compile_for_mesh(_graph(path), TARGET, "bisect", schedule="latency")
    assert comp.schedule == "latency"
    assert comp.plan.kinds[depthwise] != "whole", comp.plan.kinds
    res = _run_mesh(comp, feeds, tmp_path)
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)


def test_graph_tensors_with_slashes_are_sliced_under_their_symbol(tmp_path):
    """A model whose input and output names hold '/' (as Caffe2's exports do,
    `gpu_0/data_0`): cores that load a slice of the input or write a slice of the
    output declare it under the same symbol as a core holding it whole
    (`storage.symbol_name`), so the program reads back and computes
    onnxruntime's outputs within 1e-4."""
    import onnx
    import onnxruntime as ort

    from nnx.lowering.storage import symbol_name
    from nnx.passes.lower_to_mesh import save_mesh_program

    path = tmp_path / "slashes.onnx"
    _row_split_cnn(str(tmp_path / "plain.onnx"))
    m = onnx.load(str(tmp_path / "plain.onnx"))
    renames = {m.graph.input[0].name: "gpu_0/data_0", m.graph.output[0].name: "gpu_0/softmax_1"}
    for v in list(m.graph.input) + list(m.graph.output):
        v.name = renames.get(v.name, v.name)
    for node in m.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    onnx.save(m, str(path))
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"gpu_0/data_0": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}
    ref = ort.InferenceSession(str(path)).run(None, feeds)[0]
    comp = compile_for_mesh(_graph(path), TARGET, "bisect", schedule="latency")
    asm = tmp_path / "prog.s"
    save_mesh_program(comp, str(asm))
    assert "slice=" in asm.read_text()  # some core holds a slice of a graph tensor
    res = MeshSimulator(read_mesh_program(str(asm)), load_target(TARGET)).run(
        {symbol_name(k): v for k, v in feeds.items()})
    np.testing.assert_allclose(res.outputs[symbol_name("gpu_0/softmax_1")], ref, rtol=0, atol=1e-4)
