"""Loss functions of graph-autodiff: the loss value and its gradient with respect to
the model's output, both as graph ops (docs/training.md, "Losses").

* `cross-entropy`: logits z of shape (..., C), labels (...) int64 class indices;
  loss = mean over every leading position of -log softmax(z)[label];
  dz = (softmax(z) - onehot(label)) / N, N the number of positions.
* `mse`: output y and target t of the same shape; loss = mean((y - t)^2) over every
  element; dy = 2 (y - t) / N, N the number of elements.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue

from nnx.autodiff.emitter import Emitter, dtype_of
from nnx.types import shape_of

LOSSES = ("cross-entropy", "mse")


def labels_type(loss: str, output: SSAValue) -> Attribute:
    """The type of the `labels` argument for `loss` over the model output."""
    t = output.type
    assert isinstance(t, TensorType)
    if loss == "cross-entropy":
        return TensorType(IntegerType(64), list(t.get_shape())[:-1])
    return t


def emit_loss(em: Emitter, loss: str, output: SSAValue, labels: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(loss as a rank-0 tensor, gradient of the loss w.r.t. output)."""
    shape = tuple(shape_of(output.type))
    dt = dtype_of(output)
    all_axes = list(range(len(shape)))
    if loss == "mse":
        d = em.sub(output, labels)
        value = em.emit("ReduceMean", [em.mul(d, d), em.ints(all_axes)], {"keepdims": 0})
        n = float(np.prod(shape)) if shape else 1.0
        return value, em.scale(d, 2.0 / n)
    c = shape[-1]
    lead = shape[:-1]
    lsm = em.emit("LogSoftmax", [output], {"axis": -1})
    idx = em.reshape(labels, (*lead, 1))
    picked = em.emit("GatherElements", [lsm, idx], {"axis": -1})
    value = em.neg(em.emit("ReduceMean", [picked, em.ints(all_axes)], {"keepdims": 0}))
    onehot = em.emit("Equal", [idx, em.ints(range(c))])
    target = em.where(onehot, em.const(1.0, dt), em.const(0.0, dt))
    n = float(np.prod(lead)) if lead else 1.0
    grad = em.scale(em.sub(em.emit("Exp", [lsm]), target), 1.0 / n)
    return value, grad
