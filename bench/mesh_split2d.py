"""2-D splits of ResNet-18's 512 x 512 x 3 x 3 convs on meshes of the quarter-mesh's
core sizes (docs/mesh.md, "2-D splits").

ResNet-18's weights (44.57 MiB after the graph passes) give a quarter mesh of 11.1 MiB:
4 x 4 cores of 712 KiB (bench/split_fuse_quarter.py), or 8 x 8 of 176 KiB. Its last 512 x 512 x 3 x 3 conv
(9 MiB of weights, input and output 1 x 512 x 7 x 7 = 98 KiB) fits neither by output
channels (every part holds the whole input) nor along its input channels (every part
holds full-size partial outputs). This builds one program holding that conv with
ResNet-18's own weights and bias (cache/bench-models/resnet18.onnx, last conv of
/11), fed by a 1x1 conv 32 -> 512 on 7 x 7 (program inputs are still held whole
by one core) and read by relu + global average pool; for each mesh it compiles
with lower-to-mesh, runs the mesh simulator and prints the conv's split (ki x kj),
the cores used, cycles, NoC byte-hops, max |err| against onnxruntime, and the same
compile with 1-D splits only (the baseline; its one error line). For the `--parts`
meshes it lowers each 2-D part's stage alone (lower-to-chip) and prints their
storage against the core's memory: whether the conv's parts fit the cores even where
the whole program needs more cores than the mesh has (program inputs and outputs
held whole on one core need cores of their own).

    .venv/bin/python bench/mesh_split2d.py [--meshes 4x4:712,4x5:712,8x8:176,9x9:176] [--parts 4x4:712]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from split_fuse_quarter import mesh_target  # noqa: E402  targets/mesh.toml resized, caches shrunk
RESNET18 = os.path.join(ROOT, "cache", "bench-models", "resnet18.onnx")
GRAPH_PASSES = "builtin.module(graph-fold-constants,canonicalize,graph-fuse,dce)"
CONV = "/11/conv2/Conv"
KIB = 1024


def conv_program(path: str) -> dict[str, np.ndarray]:
    """Write the one-conv program (see the module docstring) to `path`; its feeds."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load(RESNET18)
    inits = {t.name: t for t in m.graph.initializer}
    node = next(n for n in m.graph.node if n.name == CONV)
    w, b = numpy_helper.to_array(inits[node.input[1]]), numpy_helper.to_array(inits[node.input[2]])
    rng = np.random.default_rng(0)
    pre = (rng.standard_normal((512, 32, 1, 1)) / np.sqrt(32)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "P"], ["a"], name="pre"),
             helper.make_node("Relu", ["a"], ["r"], name="act"),
             helper.make_node("Conv", ["r", "W", "B"], ["c"], name=CONV, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["cr"], name="act2"),
             helper.make_node("GlobalAveragePool", ["cr"], ["y"], name="gap")]
    gr = helper.make_graph(nodes, "resnet18_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 7, 7])],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512, 1, 1])],
                           [numpy_helper.from_array(pre, "P"), numpy_helper.from_array(w, "W"),
                            numpy_helper.from_array(b, "B")])
    model = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return {"x": rng.standard_normal((1, 32, 7, 7)).astype(np.float32)}


def compile_graph(path: str, target: str, two_d: bool = True):
    from nnx import api
    from nnx.mesh import reduction_splits
    from nnx.mesh.compile import compile_for_mesh

    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    saved = reduction_splits.block_split
    if not two_d:
        reduction_splits.block_split = lambda *a, **k: None
    try:
        return compile_for_mesh(module, target, "bisect")
    finally:
        reduction_splits.block_split = saved


def bench_mesh(path: str, feeds, directory: str, width: int, height: int, core_memory: int) -> str:
    """One result line for a mesh."""
    import onnxruntime as ort

    from nnx.mesh.errors import MeshFitError
    from nnx.passes.lower_to_mesh import save_mesh_program
    from nnx.sim.asm_mesh import read_mesh_program
    from nnx.sim.mesh_simulator import MeshSimulator
    from nnx.target import load_target

    target = mesh_target(directory, width, height, core_memory)
    head = f"{width}x{height}x{core_memory // KIB}KiB"
    try:
        compile_graph(path, target, two_d=False)
        base = "1-D only: compiles"
    except MeshFitError as e:
        base = f"1-D only: {str(e).split(': ', 2)[-1]}"
    t0 = time.time()
    try:
        comp = compile_graph(path, target)
    except MeshFitError as e:
        return f"{head}: 2-D: FAILED: {str(e).split(': ', 2)[-1]}; {base}"
    secs = time.time() - t0
    plan = comp.plan
    i = next((i for i, op in enumerate(plan.ops) if plan.kinds[i] == "block"), None)
    if i is None:
        return f"{head}: a 1-D split fits (no 2-D split): {base}"
    blk = plan.blocks[i]
    prog = os.path.join(directory, "prog.s")
    save_mesh_program(comp, prog)
    res = MeshSimulator(read_mesh_program(prog), load_target(target)).run(feeds)
    ref = ort.InferenceSession(path).run(None, feeds)[0]
    err = float(np.abs(res.outputs["y"] - ref).max())
    return (f"{head}: conv split {blk.ki} x {blk.kj} (input channels x output channels), "
            f"{len(plan.stages)} cores, {res.cycles} cycles, {res.noc_byte_hops} byte-hops, max err {err:.2e}, "
            f"compile {secs:.1f} s; {base}")


def lowered_parts(path: str, directory: str, width: int, height: int, core_memory: int) -> str:
    """The conv's 2-D parts planned for the mesh (the fullest fill that plans one),
    each part's stage lowered alone by lower-to-chip: the largest storage against
    the core's memory (the rest of the program may still need more cores)."""
    from nnx import api
    from nnx.mesh.compile import main_function
    from nnx.mesh.core_graph import build_stage_module, stage_io
    from nnx.mesh.partition import MEMORY_FILLS, plan_partition
    from nnx.target import load_target

    target = mesh_target(directory, width, height, core_memory)
    module = api.import_onnx(path, None, 1)
    api.run_pipeline(module, GRAPH_PASSES, verify_each=False)
    main = main_function(module)
    ops = [op for op in main.body.block.ops if op.name not in ("graph.constant", "func.return")]
    returned = list(main.body.block.last_op.operands)
    head = f"{width}x{height}x{core_memory // KIB}KiB"
    for fill in sorted(MEMORY_FILLS):
        plan = plan_partition(ops, width * height, core_memory, 1.0, fill, returned)
        i = next((i for i in range(len(ops)) if plan.kinds[i] == "block"), None)
        if i is not None and plan.blocks[i].ki * plan.blocks[i].kj <= width * height:
            break
    else:
        return f"{head}: no 2-D split of the conv fits the cores"
    blk = plan.blocks[i]
    ios = stage_io(plan, returned, ["y"])
    tgt = load_target(target)
    sizes = []
    for s in plan.stages:
        if not any(it[0] == i for it in s.items):
            continue
        mod, _, _ = build_stage_module(plan, main, ios[s.index], s.index, returned)
        api.run_pipeline(mod, f'builtin.module(lower-to-chip{{target="{target}"}})', verify_each=False)
        sizes.append(api.program_from_chip(mod, tgt, "core.s").program.storage_bytes)
    return (f"{head}: conv split {blk.ki} x {blk.kj} at fill {fill}: {len(sizes)} parts, lowered storage "
            f"{min(sizes)}..{max(sizes)} bytes of {core_memory} ({max(sizes) / core_memory:.1%})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--meshes", default="4x4:712,4x5:712,8x8:176,9x9:176",
                    help="WxH:KiB per core, comma-separated")
    ap.add_argument("--parts", default="4x4:712",
                    help="WxH:KiB meshes whose 2-D parts are lowered alone (see lowered_parts)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "conv.onnx")
        feeds = conv_program(path)
        for spec in filter(None, args.parts.split(",")):
            dims, kib = spec.split(":")
            w, h = (int(x) for x in dims.split("x"))
            print(lowered_parts(path, d, w, h, int(kib) * KIB), flush=True)
        for spec in args.meshes.split(","):
            dims, kib = spec.split(":")
            w, h = (int(x) for x in dims.split("x"))
            print(bench_mesh(path, feeds, d, w, h, int(kib) * KIB), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
