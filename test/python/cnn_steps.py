"""Small BatchNorm CNN training steps for the training and swap tests: conv (3x3,
no bias) + BatchNorm + ReLU layers, global average pool, a linear head, exported
from torch in training mode and turned into a step by graph-autodiff."""

from __future__ import annotations

from pathlib import Path

import pytest


def bn_cnn(layers, classes: int = 10, seed: int = 0):
    """The torch model: `layers` is a list of (output channels, stride)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    mods, c = [], 1
    for o, s in layers:
        mods += [torch.nn.Conv2d(c, o, 3, s, 1, bias=False), torch.nn.BatchNorm2d(o), torch.nn.ReLU()]
        c = o
    mods += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(c, classes)]
    return torch.nn.Sequential(*mods)


def bn_resnet(blocks: int, channels: int = 16, classes: int = 10, seed: int = 0):
    """A stem conv-BN-ReLU then `blocks` residual blocks (conv-BN-ReLU-conv-BN, plus
    the block's input, ReLU), global average pool, linear head."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(channels, channels, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(channels), nn.ReLU(),
                                      nn.Conv2d(channels, channels, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(channels))

        def forward(self, x):
            return torch.relu(self.body(x) + x)

    return nn.Sequential(nn.Conv2d(1, channels, 3, 1, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
                         *[Block() for _ in range(blocks)], nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(channels, classes))


def bn_cnn_step(tmp_path: Path, layers, batch: int, hw: int = 8, loss: str = "cross-entropy",
                optimizer: str = "sgd", lr: float = 0.1, model=None, forward_masks: bool = False):
    """(torch model, the graph-autodiff step module) of `model` (default
    `bn_cnn(layers)`) on (batch, 1, hw, hw) inputs."""
    torch = pytest.importorskip("torch")
    from nnx.importer import import_onnx
    from nnx.ir_io import make_context
    from nnx.passes.graph_autodiff import GraphAutodiffPass

    model = bn_cnn(layers) if model is None else model
    path = tmp_path / "cnn.onnx"
    torch.onnx.export(model, (torch.zeros(batch, 1, hw, hw),), str(path), input_names=["input"],
                      output_names=["logits"], training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=17, dynamo=False)
    module = import_onnx(str(path))
    GraphAutodiffPass(loss=loss, optimizer=optimizer, lr=lr, forward_masks=forward_masks).apply(
        make_context(), module)
    module.verify()
    return model, module
