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
