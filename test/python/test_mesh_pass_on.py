"""Received pieces passed on through a view keep the layers' order
(nnx/mesh/stitch.py, `_Passing`; docs/mesh.md, "Compilation").

Under the latency schedule a transformer's head reshape (1 x rows x heads x d to
1 x rows x width) is cut by rows, its parts on cores other than its producer's: such
a core receives a piece and sends it on unchanged, and no instruction touches it.
With only instructions to place messages by, the RECV went at the program's start
and the SEND at its end, after every layer the core runs; a core that also runs a
later op needing every piece (the output projection) then waits for pieces whose
senders wait for its own: the encoder block on 4 x 4 cores deadlocked in the
simulator. Each such message now stands where the view stands in the core's op
order."""

from __future__ import annotations

import numpy as np
import pytest

from mesh_targets import resized_mesh
from nnx.mesh import stitch
from nnx.passes.lower_to_mesh import save_mesh_program
from nnx.sim.asm import AsmError
from nnx.sim.asm_mesh import read_mesh_program
from nnx.sim.mesh_simulator import MeshSimulator
from nnx.target import load_target
from test_mesh_pipeline_transformer import SEQ, WIDTH, _compiled, _encoder_block


def test_encoder_block_latency_passes_views_in_order(tmp_path, monkeypatch):
    """The encoder block, `latency` on 4 x 4 cores of 72 KiB: with the first rule
    (`PASS_ON_IN_ORDER` False) the program deadlocks; now it runs and matches
    onnxruntime within 1e-4."""
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "block.onnx"
    _encoder_block(path)
    target = resized_mesh(tmp_path, 4, 4, 72 * 1024, 8192)
    x = np.random.default_rng(1).standard_normal((1, SEQ, WIDTH)).astype(np.float32)
    ref = ort.InferenceSession(str(path)).run(None, {"x": x})[0]

    def run(name):
        comp = _compiled(path, target, "latency")
        assert comp.schedule == "latency"
        asm = str(tmp_path / f"{name}.s")
        save_mesh_program(comp, asm)
        return MeshSimulator(read_mesh_program(asm), load_target(target)).run({"x": x})

    res = run("in_order")
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=0, atol=1e-4)
    monkeypatch.setattr(stitch, "PASS_ON_IN_ORDER", False)
    with pytest.raises(AsmError, match="deadlock"):
        run("at_the_ends")


def _add_across_a_conv(path, adjacent: bool):
    """x, s (1 x 8 x 8 x 8) -> y = Conv1x1(x) + s and z = Conv3x3(x): the add after
    the 3 x 3 conv in the node order, or right after its producer (`adjacent`)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in (("W1", (8, 8, 1, 1)), ("W2", (8, 8, 3, 3)))]
    c1 = helper.make_node("Conv", ["x", "W1"], ["c1"])
    c2 = helper.make_node("Conv", ["x", "W2"], ["z"], pads=[1, 1, 1, 1])
    add = helper.make_node("Add", ["c1", "s"], ["y"])
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 8, 8]) for n in ("x", "s", "y", "z")]
    gr = helper.make_graph([c1, add, c2] if adjacent else [c1, c2, add], "g", vi[:2], vi[2:], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("adjacent", [False, True])
def test_in_order_lowering_fuses_a_received_operand_only_where_it_follows(adjacent, tmp_path):
    """Lowered in op order (a mesh core's program), an elementwise op reading an
    argument of the function (a received piece, here `s`) is fused into its
    producer's loop only where it comes right after it: fused across the 3 x 3 conv
    it would read `s` (and its RECV would stand) ahead of that conv, whose SENDs
    other cores may wait on (RegNetX-400MF's latency program deadlocked so). Its
    Add then comes after every instruction of the 3 x 3 conv, or, adjacent, before
    them."""
    from nnx import api
    from nnx.ir_io import make_context
    from nnx.passes.lower_to_chip import LowerToChipPass
    from test_lower_to_mesh import GRAPH_PASSES, TARGET

    path = tmp_path / "m.onnx"
    _add_across_a_conv(path, adjacent)
    mod = api.import_onnx(str(path), None, 1)
    api.run_pipeline(mod, GRAPH_PASSES, verify_each=False)
    prog = LowerToChipPass(target=TARGET, schedule=False).program(make_context(), mod, load_target(TARGET),
                                                                     "core.s")
    # (mnemonic, whether a source is a 3 x 3 kernel) of each instruction
    mn = [(ins.mnemonic, any(t is not None and tuple(t.shape[-2:]) == (3, 3) for t in ins.srcs))
          for ins in prog.program.instrs]
    add_at = max(k for k, (m, _) in enumerate(mn) if m == "Add")
    conv3 = [k for k, (m, k3) in enumerate(mn) if m == "Conv" and k3]
    assert conv3 and (add_at < min(conv3) if adjacent else add_at > max(conv3)), mn


_UNTOUCHED = """.storage 4096
.input a S:0x0<16xf32>
.input b S:0x100<16xf32>
.output y S:0x200<16xf32>
.text
DAU0 LOAD    N:0x0<16xf32> <- S:0x100<16xf32>
VPU0 Relu    O:0x0<16xf32> <- N:0x0<16xf32>
DAU0 STORE   S:0x200<16xf32> <- O:0x0<16xf32>
"""


@pytest.mark.parametrize("in_order", [True, False])
def test_a_received_piece_no_instruction_touches_waits_for_its_reader(in_order, monkeypatch):
    """A received piece that stays on its core untouched (a graph output that a
    view makes of it: torchvision's SqueezeNet 1.1 exported by torch.export, whose
    pooled logits are reshaped into the output, deadlocked with its RECV first) is
    received where its first reader stands in the op order (`op_positions`: here
    the third instruction), not at the program's start (`PASS_ON_IN_ORDER` False)."""
    from nnx.sim.asm import parse_program
    from nnx.sim.isa_mesh import RECV

    monkeypatch.setattr(stitch, "PASS_ON_IN_ORDER", in_order)
    cp = stitch.CoreProgram(parse_program(_UNTOUCHED, "core.s"), None, recv={"a": 5}, send={},
                            op_positions={"a": (2, 1)})
    out = [ins.mnemonic for ins in stitch.add_messages(cp).instrs]
    assert out.count(RECV) == 1
    assert out.index(RECV) == (2 if in_order else 0), out
