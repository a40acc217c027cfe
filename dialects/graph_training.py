"""Gradient ops of the `graph` dialect that ONNX has no operator for.

`graph-autodiff` (docs/training.md) expresses backward passes with ONNX operators
wherever one exists (a conv's input gradient is a ConvTranspose, an embedding's
gradient a ScatterND with reduction=add, ...). The ops here cover the rest. They are
ordinary graph ops (operands, properties, `after(...)`, verifier shape checks);
`ONNX_TYPE` names their kernel in nnx/interp/kernels_grad.py, which defines what
they compute. They are registered in the `Graph` dialect (dialects/graph.py).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import VerifyException

from nnx import shape_rules as sr
from nnx.dialects.graph import (
    GraphOp,
    _expect_rank_at_least,
    _sh,
    _tensor,
    _window_out,
    int_prop,
    ints_prop,
    same_element_type,
    string_prop,
)


class _WindowGradOp(GraphOp):
    """Common operands/properties of the window-op gradients: the forward op's input
    X (N, C, spatial...), the gradient dY of its output, and the forward op's window
    attributes with their ONNX meaning and defaults."""

    X = operand_def(TensorType)
    dY = operand_def(TensorType)
    auto_pad = string_prop()
    dilations = ints_prop()
    kernel_shape = ints_prop()
    pads = ints_prop()
    strides = ints_prop()

    def _check_dy(self, channels: int, ceil_mode: int = 0) -> None:
        _expect_rank_at_least("X", self.X, 3)
        kernel = self.attr("kernel_shape")
        x = _sh(self.X)
        if kernel is None or len(kernel) != len(x) - 2:
            raise VerifyException(f"kernel_shape must have {len(x) - 2} values, got {kernel}")
        if self.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise VerifyException("auto_pad must be NOTSET or VALID (explicit pads)")
        want = (x[0], channels, *_window_out(self, self.X, kernel, ceil_mode))
        if _sh(self.dY) != want:
            raise VerifyException(
                f"dY has shape {sr.fmt(_sh(self.dY))}, the forward output is {sr.fmt(want)}"
            )


@irdl_op_definition
class ConvWeightGradOp(_WindowGradOp):
    """Gradient of ONNX Conv with respect to its weight.

    dW[m, c, k...] = sum over n and output positions p of
    dY[n, m, p...] * Xpad[n, g * C/group + c, p * strides + k * dilations], where m is in
    group g and Xpad is X zero-padded by `pads`. The result has the weight's shape
    (M, C/group, kernel_shape...), M being dY's channels. Attributes as ONNX Conv.
    """

    name = "graph.conv_weight_grad"
    ONNX_TYPE: ClassVar[str] = "ConvWeightGrad"
    dW = result_def(TensorType)
    group = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        el = same_element_type(self, [self.X, self.dY])
        m = _sh(self.dY)[1] if len(_sh(self.dY)) > 1 else 0
        group = self.attr("group", 1)
        c = _sh(self.X)[1]
        if group <= 0 or c % group or m % group:
            raise VerifyException(f"group={group} must divide X's {c} and dY's {m} channels")
        self._check_dy(m)
        return [_tensor(el, (m, c // group, *self.attr("kernel_shape")))]


@irdl_op_definition
class MaxPoolGradOp(_WindowGradOp):
    """Gradient of ONNX MaxPool with respect to X: each dY element is added to the
    element of X that is the maximum of its window (the first one in row-major window
    order on ties, as PyTorch); padding never wins. Attributes as ONNX MaxPool."""

    name = "graph.max_pool_grad"
    ONNX_TYPE: ClassVar[str] = "MaxPoolGrad"
    dX = result_def(TensorType)
    ceil_mode = int_prop()
    storage_order = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.X, self.dY])
        self._check_dy(_sh(self.X)[1], self.attr("ceil_mode", 0))
        return [self.X.type]


@irdl_op_definition
class AveragePoolGradOp(_WindowGradOp):
    """Gradient of ONNX AveragePool with respect to X: each dY element is divided by
    its window's divisor (the window size with `count_include_pad`, else the number of
    elements of X in it) and added to every X element of the window. X only gives the
    shape. Attributes as ONNX AveragePool."""

    name = "graph.average_pool_grad"
    ONNX_TYPE: ClassVar[str] = "AveragePoolGrad"
    dX = result_def(TensorType)
    ceil_mode = int_prop()
    count_include_pad = int_prop()

    def infer_result_types(self) -> list[Attribute | None] | None:
        same_element_type(self, [self.X, self.dY])
        self._check_dy(_sh(self.X)[1], self.attr("ceil_mode", 0))
        return [self.X.type]


TRAINING_OP_CLASSES: list[type[GraphOp]] = [AveragePoolGradOp, ConvWeightGradOp, MaxPoolGradOp]
"""The gradient ops, registered in the Graph dialect."""

TRAINING_OPS: dict[str, type[GraphOp]] = {c.ONNX_TYPE: c for c in TRAINING_OP_CLASSES}
"""Kernel name (`ONNX_TYPE`) -> op class."""
