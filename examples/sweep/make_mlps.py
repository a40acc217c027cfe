"""Write the three models of the example sweep (docs/sweeps.md, "A worked example"):
MLPs of MatMul+Relu layers with random weights, built with onnx.helper.

    python examples/sweep/make_mlps.py [DIR]     # writes DIR/mlp256.onnx, mlp384.onnx, mlp512.onnx
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: (file name, width, layers, seed) of the example's models; batch 16
MODELS = (("mlp256.onnx", 256, 6, 0), ("mlp384.onnx", 384, 4, 1), ("mlp512.onnx", 512, 3, 2))


def mlp(path: str, d: int, layers: int, seed: int, batch: int | str = 16) -> None:
    """A chain of `layers` MatMul+Relu of width `d` (weights N(0, 0.1^2)); `batch` may
    be symbolic (a string: the sweep file then gives the input shape)."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array((rng.standard_normal((d, d)) * 0.1).astype(np.float32), f"w{i}"))
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]), helper.make_node("Relu", [f"m{i}"], [f"r{i}"])]
        x = f"r{i}"
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, d])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, d])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), str(path))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, d, layers, seed in MODELS:
        mlp(os.path.join(out, name), d, layers, seed)
        print(os.path.join(out, name))
