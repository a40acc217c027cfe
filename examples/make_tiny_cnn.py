"""Generates examples/tiny_cnn.onnx: a small image classifier with the shape of a real CNN.

conv3x3-bn-relu -> depthwise conv3x3-bn-relu6 -> pointwise conv -> residual add ->
maxpool -> global average pool -> flatten -> gemm -> softmax, with random trained-like
parameters (BatchNorm statistics and biases randomised, not 0/1). Deterministic.
Run: python examples/make_tiny_cnn.py [OUT.onnx]
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def w(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    def bn(prefix, c):
        return [
            numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), f"{prefix}.gamma"),
            numpy_helper.from_array(rng.uniform(-0.2, 0.2, c).astype(np.float32), f"{prefix}.beta"),
            numpy_helper.from_array(rng.uniform(-0.1, 0.1, c).astype(np.float32), f"{prefix}.mean"),
            numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), f"{prefix}.var"),
        ]

    inits = [
        w("conv1.w", 16, 3, 3, 3), *bn("bn1", 16),
        w("dw.w", 16, 1, 3, 3), *bn("bn2", 16),
        w("pw.w", 16, 16, 1, 1), w("pw.b", 16, scale=0.1),
        w("fc.w", 10, 16), w("fc.b", 10, scale=0.1),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(6.0, np.float32), "six"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn1.gamma", "bn1.beta", "bn1.mean", "bn1.var"], ["b1"], name="bn1", epsilon=1e-5),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "dw.w"], ["c2"], name="dwconv", pads=[1, 1, 1, 1], group=16),
        helper.make_node("BatchNormalization", ["c2", "bn2.gamma", "bn2.beta", "bn2.mean", "bn2.var"], ["b2"], name="bn2"),
        helper.make_node("Clip", ["b2", "zero", "six"], ["r2"], name="relu6"),
        helper.make_node("Conv", ["r2", "pw.w", "pw.b"], ["c3"], name="pwconv"),
        helper.make_node("Add", ["c3", "r1"], ["res"], name="residual"),
        helper.make_node("MaxPool", ["res"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p1"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.checker.check_model(model)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/tiny_cnn.onnx"
    onnx.save(build(), out)
    print(f"wrote {out}")
