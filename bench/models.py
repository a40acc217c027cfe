"""Full-size real architectures for the benchmarks, exported to ONNX with random weights.

Kept out of git: generated once into cache/bench-models/ (ResNet-50 ~100 MB, BERT-base
~440 MB). Needs torch==2.13.0 (CPU, from this machine's disk) and transformers.
BatchNorm statistics and biases are randomised so exporters keep them as in trained
models (freshly built ones are all 0/1, and exporters then drop or deduplicate them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

CACHE = Path(__file__).resolve().parent.parent / "cache" / "bench-models"


def _randomise(model) -> None:
    """BatchNorm statistics and biases drawn at random, as in trained models (the
    test model zoo's rule: one definition for tests and benchmarks)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "python"))
    from model_zoo import _randomise as randomise

    randomise(model)


def transformers_importable() -> None:
    """transformers imports torchvision when it is installed, and PyPI's torchvision
    does not import beside this torch until its custom operators are declared: declare
    them (a no-op without torchvision)."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is None:
        return
    import torch

    try:
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        transformers_importable.lib = lib  # keep the definitions alive
    except RuntimeError:
        pass  # already declared


def _resnet50():
    """torchvision's ResNet-50 layout (bottleneck 3-4-6-3), written out here."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def _densenet121():
    """torchvision's DenseNet-121 layout (growth 32, blocks 6-12-24-16, bottleneck 4 x
    growth, transitions halving the channels), written out here: each layer
    concatenates every earlier feature map of its block, as torchvision's does."""
    import torch
    from torch import nn

    def bn_relu_conv(cin, cout, k):
        return [nn.BatchNorm2d(cin), nn.ReLU(inplace=True), nn.Conv2d(cin, cout, k, 1, k // 2, bias=False)]

    class Block(nn.Module):
        def __init__(self, cin, layers, growth=32):
            super().__init__()
            self.layers = nn.ModuleList(
                nn.Sequential(*bn_relu_conv(cin + i * growth, 4 * growth, 1), *bn_relu_conv(4 * growth, growth, 3))
                for i in range(layers))

        def forward(self, x):
            feats = [x]
            for layer in self.layers:
                feats.append(layer(torch.cat(feats, 1)))
            return torch.cat(feats, 1)

    mods = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)]
    c = 64
    for i, n in enumerate((6, 12, 24, 16)):
        mods.append(Block(c, n))
        c += 32 * n
        if i < 3:
            mods += [*bn_relu_conv(c, c // 2, 1), nn.AvgPool2d(2, 2)]
            c //= 2
    mods += [nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*mods)


def _resnet18():
    """torchvision's ResNet-18 layout (basic blocks 2-2-2-2, widths 64..512, 1000
    classes): the test model zoo's ResNet-18 generator at full width (one definition
    for tests and benchmarks)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "python"))
    from model_zoo import _resnet18 as resnet18

    return resnet18(64, classes=1000)


def _mobilenet_v2():
    """MobileNetV2 (1.0, 224): the paper's inverted-residual configuration, on the test
    model zoo's generator (one definition for tests and benchmarks)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test" / "python"))
    import model_zoo as mz

    return mz.mobilenet_v2_model(
        32,
        ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)),
        1280,
        1000,
    )


def _regnet_x_400mf():
    """torchvision's RegNetX-400MF layout, written out here: a stride-2 3 x 3 stem to
    32 channels, four stages of widths 32, 64, 160, 400 and depths 1, 2, 7, 12 whose
    blocks are a 1 x 1 conv, a grouped 3 x 3 conv (groups of 16 channels; stride 2 in
    a stage's first block) and a 1 x 1 conv, each with batch norm (relu after the
    first two), added to the block's input (through a strided 1 x 1 conv and batch
    norm where the shape changes) and a relu; global pool and a 1000-class
    classifier. 0.41 G MACs, 5.2 M parameters."""
    import torch.nn as nn

    def conv_bn(cin, cout, k, stride=1, groups=1, relu=True):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        return layers + [nn.ReLU(inplace=True)] if relu else layers

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.proj = nn.Sequential(*conv_bn(cin, cout, 1, stride, relu=False)) \
                if stride != 1 or cin != cout else None
            self.f = nn.Sequential(*conv_bn(cin, cout, 1), *conv_bn(cout, cout, 3, stride, cout // 16),
                                   *conv_bn(cout, cout, 1, relu=False))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu((x if self.proj is None else self.proj(x)) + self.f(x))

    mods, c = conv_bn(3, 32, 3, 2), 32
    for width, depth in ((32, 1), (64, 2), (160, 7), (400, 12)):
        for i in range(depth):
            mods.append(Block(c, width, 2 if i == 0 else 1))
            c = width
    mods += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 1000)]
    return nn.Sequential(*mods)


def _squeezenet1_1():
    """torchvision's SqueezeNet 1.1 layout, written out here: a stride-2 3 x 3 conv to
    64 channels, eight fire modules (a 1 x 1 squeeze conv, then 1 x 1 and 3 x 3 expand
    convs concatenated, each with relu) between 3 x 3 stride-2 max pools in ceil mode,
    and a 1 x 1 conv classifier to 1000 channels, relu, global pool. 0.35 G MACs,
    1.2 M parameters (5 MB)."""
    import torch
    import torch.nn as nn

    class Fire(nn.Module):
        def __init__(self, cin, squeeze, expand):
            super().__init__()
            self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True))
            self.e1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU(inplace=True))
            self.e3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU(inplace=True))

        def forward(self, x):
            x = self.squeeze(x)
            return torch.cat([self.e1(x), self.e3(x)], 1)

    def pool():
        return nn.MaxPool2d(3, 2, ceil_mode=True)

    return nn.Sequential(nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True), pool(), Fire(64, 16, 64), Fire(128, 16, 64),
                         pool(), Fire(128, 32, 128), Fire(256, 32, 128), pool(), Fire(256, 48, 192),
                         Fire(384, 48, 192), Fire(384, 64, 256), Fire(512, 64, 256), nn.Conv2d(512, 1000, 1),
                         nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten())


_CNNS = {"resnet18": _resnet18, "resnet50": _resnet50, "mobilenet_v2": _mobilenet_v2,
         "regnet_x_400mf": _regnet_x_400mf, "squeezenet1_1": _squeezenet1_1}


def get(name: str) -> Path:
    """Path of the ONNX export of `name` (resnet18 | resnet50 | mobilenet_v2 |
    regnet_x_400mf | squeezenet1_1 | bert-base), generated on first use."""
    import torch

    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{name}.onnx"
    if path.exists():
        return path
    tmp = path.with_suffix(".tmp.onnx")
    torch.manual_seed(0)
    if name in _CNNS:
        model = _CNNS[name]().eval()
        _randomise(model)
        args = (torch.randn(1, 3, 224, 224),)
        torch.onnx.export(model, args, str(tmp), input_names=["input"], output_names=["logits"],
                          opset_version=17, dynamo=False)
    elif name == "bert-base":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import BertConfig, BertModel

        bert = BertModel(BertConfig()).eval()

        class Wrapper(torch.nn.Module):  # transformers 5 wants keyword arguments
            def __init__(self):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids)
                return out.last_hidden_state, out.pooler_output

        model = Wrapper().eval()
        ids = torch.randint(0, 30522, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        tt = torch.zeros(1, 128, dtype=torch.int64)
        torch.onnx.export(model, (ids, mask, tt), str(tmp),
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state", "pooler_output"],
                          opset_version=17, dynamo=False)
    else:
        raise ValueError(f"unknown bench model {name}")
    tmp.rename(path)
    return path
