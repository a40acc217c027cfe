"""Write the small ONNX models that the lit tests in this directory import.

Usage (from a RUN line): %python %S/make_models.py %t   -> %t/<name>.onnx for every model.
Deterministic (fixed seeds); IR version 10, opset 17 unless a model says otherwise.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

F = T.FLOAT
I64 = T.INT64


def model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


def arr(name, a):
    return nh.from_array(np.asarray(a), name)


def mlp() -> onnx.ModelProto:
    """Conv + Relu + residual Add, dynamic batch 'N', named nodes and values."""
    rng = np.random.default_rng(0)
    return model(
        [
            h.make_node("Conv", ["image", "w", "b"], ["conv_out"], name="stem/conv",
                        pads=[1, 1, 1, 1]),
            h.make_node("Relu", ["conv_out"], ["act"], name="stem/relu"),
            h.make_node("Add", ["act", "act"], ["features"], name="stem/add"),
        ],
        [h.make_tensor_value_info("image", F, ["N", 3, 8, 8])],
        [h.make_tensor_value_info("features", F, ["N", 4, 8, 8])],
        [arr("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32)),
         arr("b", np.zeros(4, np.float32))],
    )


def shape_chain() -> onnx.ModelProto:
    """torch-style dynamic flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape,
    plus Range/ConstantOfShape/Equal/Where over shapes; all of it must fold."""
    return model(
        [
            h.make_node("Relu", ["x"], ["r"], name="relu"),
            h.make_node("Shape", ["r"], ["s"], name="shape"),
            h.make_node("Constant", [], ["zero"], name="c0", value=arr("", np.array(0))),
            h.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
            h.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsqueeze"),
            h.make_node("Concat", ["n1", "minus1"], ["shp"], name="concat", axis=0),
            # Where(Equal(shp, -1), 1, shp): the ONNX exporters' Expand idiom
            h.make_node("Equal", ["shp", "minus1"], ["is_m1"], name="equal"),
            h.make_node("ConstantOfShape", ["two"], ["ones"], name="cos",
                        value=arr("", np.array([1], np.int64))),
            h.make_node("Where", ["is_m1", "ones", "shp"], ["shp2"], name="where"),
            h.make_node("Range", ["r0", "r2", "r1"], ["rng"], name="range"),
            h.make_node("Cast", ["rng"], ["rngf"], name="cast", to=F),
            h.make_node("Reshape", ["r", "shp"], ["flat"], name="reshape"),
            h.make_node("Add", ["shp2", "shp2"], ["shp3"], name="add_shapes"),
            h.make_node("Add", ["flat", "flat"], ["y"], name="add"),
        ],
        [h.make_tensor_value_info("x", F, ["batch", 2, 4])],
        [h.make_tensor_value_info("y", F, ["batch", 8]),
         h.make_tensor_value_info("shp3", I64, [2]),
         h.make_tensor_value_info("rngf", F, [2])],
        [arr("ax0", np.array([0], np.int64)), arr("minus1", np.array([-1], np.int64)),
         arr("two", np.array([2], np.int64)), arr("r0", np.array(0, np.int64)),
         arr("r1", np.array(1, np.int64)), arr("r2", np.array(2, np.int64))],
    )


def split_v11() -> onnx.ModelProto:
    """Opset 11 Split with the `split` attribute (an input since opset 13)."""
    return model(
        [h.make_node("Split", ["x"], ["a", "b"], name="split", axis=1, split=[1, 3])],
        [h.make_tensor_value_info("x", F, [2, 4])],
        [h.make_tensor_value_info("a", F, None), h.make_tensor_value_info("b", F, None)],
        opset=11,
    )


def unsupported() -> onnx.ModelProto:
    return model(
        [h.make_node("Relu", ["x"], ["r"], name="ok"),
         h.make_node("Frobnicate", ["r"], ["y"], name="mystery", domain="com.example")],
        [h.make_tensor_value_info("x", F, [2])],
        [h.make_tensor_value_info("y", F, [2])],
    )


def dynamic_left() -> onnx.ModelProto:
    """Reshape to a shape that is a graph input: its result cannot be static."""
    return model(
        [h.make_node("Reshape", ["x", "target"], ["y"], name="data_dependent_reshape")],
        [h.make_tensor_value_info("x", F, [2, 3]), h.make_tensor_value_info("target", I64, [2])],
        [h.make_tensor_value_info("y", F, None)],
    )


MODELS = {
    "mlp": mlp,
    "shape_chain": shape_chain,
    "split_v11": split_v11,
    "unsupported": unsupported,
    "dynamic_left": dynamic_left,
}


def main() -> int:
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, fn in MODELS.items():
        onnx.save(fn(), os.path.join(out, f"{name}.onnx"))
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        data = mlp().SerializeToString()
        f.write(data[: len(data) // 2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
