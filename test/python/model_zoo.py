"""Small real-architecture ONNX exports for tests (importer, interpreter vs onnxruntime).

    from model_zoo import MODEL_NAMES, get_model, sample_inputs, input_shape_args

    path = get_model("tiny_resnet")          # pathlib.Path of the .onnx file
    feeds = sample_inputs("tiny_resnet")     # {input name: np.ndarray} at the static shapes
    args = input_shape_args("tiny_resnet")   # ["--input-shape", "input=1x3x32x32", ...]

Models (random weights; BatchNorm statistics and biases randomised so the exporter
keeps them, as in trained models):

* `tiny_resnet`   ResNet-style CNN: conv-BN-ReLU stem, max pool, two basic blocks
                  (one with a strided 1x1 downsample), global average pool, linear.
* `mobilenet_v2`  MobileNetV2-style: inverted residual blocks (1x1 expand, 3x3
                  depthwise, 1x1 project, ReLU6 = Clip), residual adds, pool, linear.
* `bert_2layer`   transformers BertModel, 2 layers, hidden 64, 4 heads.
* `gpt2_2layer`   transformers GPT2Model, 2 layers, hidden 64, 4 heads.

All are exported with the legacy TorchScript exporter (`dynamo=False`), opset 17,
IR version <= 10 (onnxruntime 1.31 reads it), with a dynamic batch dim (and a dynamic
sequence dim for the transformers) so that importing them exercises shape folding;
`MODEL_INPUTS` gives the static shapes to import and run them at.

Exports are cached in cache/models/ (git-ignored) under a name that includes a hash
of this file and the torch/transformers versions, so editing a generator
regenerates. Needs torch (and transformers for the two transformers): when missing,
`get_model` skips the calling test with the reason (outside pytest it raises
`ModelUnavailable`).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "cache" / "models"

MODEL_NAMES: tuple[str, ...] = ("tiny_resnet", "mobilenet_v2", "bert_2layer", "gpt2_2layer")

SEQ = 16
MODEL_INPUTS: dict[str, dict[str, tuple[tuple[int, ...], str]]] = {
    "tiny_resnet": {"input": ((1, 3, 32, 32), "float32")},
    "mobilenet_v2": {"input": ((1, 3, 32, 32), "float32")},
    "bert_2layer": {
        "input_ids": ((1, SEQ), "int64"),
        "attention_mask": ((1, SEQ), "int64"),
        "token_type_ids": ((1, SEQ), "int64"),
    },
    "gpt2_2layer": {
        "input_ids": ((1, SEQ), "int64"),
        "attention_mask": ((1, SEQ), "int64"),
    },
}
"""name -> {graph input: (static shape, numpy dtype name)} to import/run the model at."""

MODEL_OUTPUTS: dict[str, tuple[str, ...]] = {
    "tiny_resnet": ("logits",),
    "mobilenet_v2": ("logits",),
    "bert_2layer": ("last_hidden_state", "pooler_output"),
    "gpt2_2layer": ("last_hidden_state",),
}

VOCAB = 1000


class ModelUnavailable(RuntimeError):
    """torch/transformers are not installed (or the export failed)."""


def _unavailable(reason: str) -> None:
    if "pytest" in sys.modules:
        import pytest

        pytest.skip(reason)
    raise ModelUnavailable(reason)


def input_shape_args(name: str) -> list[str]:
    """nnx-import options fixing every input to its MODEL_INPUTS shape."""
    args: list[str] = []
    for inp, (shape, _) in MODEL_INPUTS[name].items():
        args += ["--input-shape", f"{inp}={'x'.join(map(str, shape))}"]
    return args


def sample_inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """Deterministic inputs at the static shapes (token ids < VOCAB, masks of ones)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for inp, (shape, dtype) in MODEL_INPUTS[name].items():
        if dtype == "float32":
            feeds[inp] = rng.standard_normal(shape).astype(np.float32)
        elif inp == "input_ids":
            feeds[inp] = rng.integers(0, VOCAB, shape).astype(np.int64)
        elif inp == "attention_mask":
            feeds[inp] = np.ones(shape, dtype=np.int64)
        else:
            feeds[inp] = np.zeros(shape, dtype=np.int64)
    return feeds


def get_model(name: str) -> Path:
    """Path of the cached ONNX export of `name` (one of MODEL_NAMES), built on first use."""
    if name not in MODEL_NAMES:
        raise KeyError(f"unknown zoo model '{name}' (known: {', '.join(MODEL_NAMES)})")
    try:
        import torch
    except ImportError:
        _unavailable("torch is not installed (pip install torch==2.13.0)")
    versions = [torch.__version__]
    if name in ("bert_2layer", "gpt2_2layer"):
        try:
            import transformers
        except ImportError:
            _unavailable("transformers is not installed")
        versions.append(transformers.__version__)
    key = hashlib.sha256(
        Path(__file__).read_bytes() + "|".join(versions).encode()
    ).hexdigest()[:12]
    return _cached_export(name, key, _EXPORTERS[name])


def _cached_export(stem: str, key: str, export) -> Path:
    """CACHE/STEM-KEY.onnx, made by `export(tmp_path)` on first use (older keys of the
    same stem are removed); export failures become ModelUnavailable."""
    path = CACHE / f"{stem}-{key}.onnx"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.onnx")
    try:
        export(tmp)
        _finish(tmp)
        os.replace(tmp, path)
        for old in CACHE.glob(f"{stem}-*.onnx"):
            if old != path:
                old.unlink(missing_ok=True)
    except ModelUnavailable:
        raise
    except Exception as e:  # noqa: BLE001 - report as unavailable, keep the cause
        tmp.unlink(missing_ok=True)
        msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
        raise ModelUnavailable(f"exporting {stem} failed: {type(e).__name__}: {msg}") from e
    finally:
        for extra in CACHE.glob(f"{tmp.name}*"):
            if extra != tmp:
                extra.unlink(missing_ok=True)
    return path


def _finish(path: Path) -> None:
    """Cap the IR version at 10 (onnxruntime 1.31 reads <= 10 reliably)."""
    import onnx

    m = onnx.load(str(path))
    if m.ir_version > 10:
        m.ir_version = 10
        onnx.save(m, str(path))


# --------------------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------------------


def _randomise(model) -> None:
    import torch

    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)
                m.weight.uniform_(0.5, 1.5, generator=g)
                m.bias.uniform_(-0.1, 0.1, generator=g)
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) and m.bias is not None:
                m.bias.uniform_(-0.1, 0.1, generator=g)


def _export_cnn(model, path: Path, name: str) -> None:
    import torch

    torch.manual_seed(0)
    model = model.eval()
    _randomise(model)
    shape, _ = MODEL_INPUTS[name]["input"]
    x = torch.randn(*shape)
    torch.onnx.export(
        model, (x,), str(path), input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17, dynamo=False,
    )


def resnet_basic_block():
    """torchvision's ResNet BasicBlock layout (3x3 conv-BN-ReLU, 3x3 conv-BN, shortcut
    with a 1x1 conv-BN when the shape changes, ReLU): the class, built on demand so
    that importing the zoo does not import torch. bench/sim_sparsity.py's ResNet-18
    uses it too."""
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + (x if self.down is None else self.down(x)))

    return Basic


def _tiny_resnet(path: Path) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)

    Basic = resnet_basic_block()

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        Basic(16, 16, 1), Basic(16, 32, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )
    _export_cnn(model, path, "tiny_resnet")


def mobilenet_v2_model(stem: int, settings, last: int, classes: int, dropout: float = 0.0):
    """A MobileNetV2 network: conv-BN-ReLU6 stem with `stem` channels, inverted-residual
    blocks from `settings` rows (expand t, channels c, repeats n, stride s) as in the
    paper's table, a 1x1 conv to `last` channels, global pool and a classifier.
    (Also used by bench/sim_sparsity.py for the full-size 224 network.)"""
    from torch import nn

    def cbr(cin, cout, k, s, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6())
        return layers

    class Inverted(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            layers = []
            if expand != 1:
                layers += cbr(cin, hidden, 1, 1)
            layers += cbr(hidden, hidden, 3, stride, groups=hidden)
            layers += cbr(hidden, cout, 1, 1, act=False)
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.body(x)
            return x + y if self.residual else y

    layers = cbr(3, stem, 3, 2)
    cin = stem
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += cbr(cin, last, 1, 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(last, classes))
    return nn.Sequential(*layers)


def _mobilenet_v2(path: Path) -> None:
    import torch

    torch.manual_seed(0)
    model = mobilenet_v2_model(16, ((1, 8, 1, 1), (6, 16, 2, 2), (6, 24, 1, 2)), 64, 10, dropout=0.2)
    _export_cnn(model, path, "mobilenet_v2")


def _bert_2layer(path: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=64, attn_implementation="eager",
    )
    model = BertModel(cfg).eval()

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.m(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids)
            return out.last_hidden_state, out.pooler_output

    feeds = {k: torch.from_numpy(v) for k, v in sample_inputs("bert_2layer").items()}
    names = list(MODEL_INPUTS["bert_2layer"])
    dyn = {n: {0: "batch", 1: "seq"} for n in names}
    dyn.update({"last_hidden_state": {0: "batch", 1: "seq"}, "pooler_output": {0: "batch"}})
    torch.onnx.export(
        Wrap(model).eval(),
        (feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"]),
        str(path), input_names=names, output_names=list(MODEL_OUTPUTS["bert_2layer"]),
        dynamic_axes=dyn, opset_version=17, dynamo=False,
    )


def _gpt2_2layer(path: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64,
        use_cache=False, attn_implementation="eager", bos_token_id=0, eos_token_id=0,
    )
    model = GPT2Model(cfg).eval()

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            # GPT-2 with the legacy exporter needs attention_mask passed by keyword
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          use_cache=False).last_hidden_state

    feeds = {k: torch.from_numpy(v) for k, v in sample_inputs("gpt2_2layer").items()}
    names = list(MODEL_INPUTS["gpt2_2layer"])
    dyn = {n: {0: "batch", 1: "seq"} for n in names}
    dyn["last_hidden_state"] = {0: "batch", 1: "seq"}
    torch.onnx.export(
        Wrap(model).eval(), (feeds["input_ids"], feeds["attention_mask"]), str(path),
        input_names=names, output_names=list(MODEL_OUTPUTS["gpt2_2layer"]),
        dynamic_axes=dyn, opset_version=17, dynamo=False,
    )


_EXPORTERS = {
    "tiny_resnet": _tiny_resnet,
    "mobilenet_v2": _mobilenet_v2,
    "bert_2layer": _bert_2layer,
    "gpt2_2layer": _gpt2_2layer,
}


# --------------------------------------------------------------------------------------
# real-exports sweep (issue 2): many architectures x exporters x opsets
# --------------------------------------------------------------------------------------
#
#     path = get_export("vit", "ts", 17)        # TorchScript exporter, opset 17
#     path = get_export("llama", "dynamo", 18)  # dynamo exporter (needs onnxscript)
#     feeds = sweep_inputs("vit")
#
# Every model is exported with dynamic batch (and sequence, for token models) axes, so
# importing it at SWEEP[name].inputs' static shapes exercises shape folding.

EXPORTERS: tuple[tuple[str, int], ...] = (
    ("ts", 9), ("ts", 10), ("ts", 13), ("ts", 17), ("dynamo", 18), ("dynamo", 23)
)
"""The (exporter, opset) pairs of the sweep: TorchScript (dynamo=False) and dynamo."""


class SweepSpec:
    """One sweep model: a builder of the torch module (forward takes the inputs
    positionally, in `inputs` order), static input shapes/dtypes, output names and
    dynamic axes (input name -> {dim: symbol})."""

    def __init__(self, build, inputs, outputs, dynamic, hf=True):
        self.build = build
        self.inputs: dict[str, tuple[tuple[int, ...], str]] = inputs
        self.outputs: tuple[str, ...] = outputs
        self.dynamic: dict[str, dict[int, str]] = dynamic
        self.hf = hf


def _tok(*names, batch=1, seq=SEQ):
    return {n: ((batch, seq), "int64") for n in names}


def _tok_dyn(*names):
    return {n: {0: "batch", 1: "seq"} for n in names}


def _img(c=3, hw=32, batch=1):
    return {"pixel_values": ((batch, c, hw, hw), "float32")}


class _HFWrap:
    """Wrap a transformers model: inputs by keyword, chosen outputs as a tuple."""

    def __new__(cls, model, in_names, out_names, **extra):
        import torch

        class Wrap(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = model

            def run(self, *args):
                out = self.m(**dict(zip(in_names, args)), **extra)
                return tuple(getattr(out, o) for o in out_names)

        # named parameters (not *args): torch.export matches dynamic_shapes by name
        params = ", ".join(in_names)
        ns: dict = {}
        exec(f"def forward(self, {params}):\n    return self.run({params})", ns)  # noqa: S102
        Wrap.forward = ns["forward"]
        return Wrap().eval()


def _hf(config_cls: str, model_cls: str, in_names, out_names, extra=None, **cfg):
    def build(opset: int = 17):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import importlib

        import torch
        import transformers

        torch.manual_seed(0)
        kw = dict(cfg)
        if opset < 14 and "attn_implementation" not in kw:
            # scaled_dot_product_attention has no TorchScript symbolic below opset 14
            kw["attn_implementation"] = "eager"
        config = getattr(transformers, config_cls)(**kw)
        mod, _, cls = model_cls.rpartition(".")
        model = getattr(importlib.import_module(mod) if mod else transformers, cls)(config).eval()
        _randomise_all(model)
        return _HFWrap(model, in_names, out_names, **(extra or {}))

    return build


def _randomise_all(model) -> None:
    """Biases and normalisation parameters randomised (fresh ones are 0/1: exporters
    fold or dedupe them, which trained models never allow)."""
    import torch

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            for pname, p in m.named_parameters(recurse=False):
                if pname == "bias" or (pname == "weight" and p.dim() == 1):
                    p.add_(torch.empty_like(p).uniform_(-0.1, 0.1, generator=g))
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.1, 0.1, generator=g)
                m.running_var.uniform_(0.5, 1.5, generator=g)


_TXT = dict(vocab_size=VOCAB, max_position_embeddings=64)


def _efficientnet():
    import torch
    from torch import nn

    torch.manual_seed(0)

    class SE(nn.Module):
        def __init__(self, c, r):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(c, r, 1)
            self.fc2 = nn.Conv2d(r, c, 1)

        def forward(self, x):
            s = self.pool(x)
            s = torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(s))))
            return x * s

    class MBConv(nn.Module):
        def __init__(self, cin, cout, k, s, e):
            super().__init__()
            h = cin * e
            self.expand = nn.Sequential(nn.Conv2d(cin, h, 1, bias=False), nn.BatchNorm2d(h), nn.SiLU()) if e != 1 else nn.Identity()
            self.dw = nn.Sequential(nn.Conv2d(h, h, k, s, k // 2, groups=h, bias=False), nn.BatchNorm2d(h), nn.SiLU())
            self.se = SE(h, max(1, cin // 4))
            self.project = nn.Sequential(nn.Conv2d(h, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.res = s == 1 and cin == cout

        def forward(self, x):
            y = self.project(self.se(self.dw(self.expand(x))))
            return x + y if self.res else y

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
        MBConv(16, 16, 3, 1, 1), MBConv(16, 24, 3, 2, 4), MBConv(24, 24, 5, 1, 4),
        nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, 10),
    ).eval()
    _randomise_all(model)
    return model


def _unet():
    import torch
    from torch import nn

    torch.manual_seed(0)

    def block(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1, self.e2, self.e3 = block(3, 8), block(8, 16), block(16, 32)
            self.pool = nn.MaxPool2d(2)
            self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.d2 = block(32, 16)
            self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
            self.d1 = block(16 + 8, 8)
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(self.pool(a))
            c = self.e3(self.pool(b))
            d = self.d2(torch.cat([self.up2(c), b], dim=1))
            u = nn.functional.interpolate(d, scale_factor=2.0, mode="nearest")
            e = self.d1(torch.cat([self.up1(d) + u, a], dim=1))
            return self.head(e)

    model = UNet().eval()
    _randomise_all(model)
    return model


def _yolo_head():
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Head(nn.Module):
        """YOLO-style: a small backbone, two scales, per-anchor box decoding with
        Split/Sigmoid/Mul/Reshape/Transpose/Concat."""

        def __init__(self, nc=3, na=2):
            super().__init__()
            self.nc, self.na, self.no = nc, na, nc + 5
            self.b1 = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.LeakyReLU(0.1))
            self.b2 = nn.Sequential(nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
            self.b3 = nn.Sequential(nn.Conv2d(32, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.Hardswish())
            self.det = nn.ModuleList([nn.Conv2d(32, na * self.no, 1), nn.Conv2d(32, na * self.no, 1)])
            self.register_buffer("anchors", torch.tensor([[[10.0, 13.0], [16.0, 30.0]], [[33.0, 23.0], [30.0, 61.0]]]))
            self.strides = (4, 8)

        def forward(self, x):
            f1 = self.b2(self.b1(x))
            f2 = self.b3(f1)
            outs = []
            for i, f in enumerate((f1, f2)):
                p = self.det[i](f)
                bs, _, ny, nx = p.shape
                p = p.view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous()
                xy, wh, conf = p.sigmoid().split((2, 2, self.nc + 1), dim=4)
                yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
                grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
                xy = (xy * 2 - 0.5 + grid) * self.strides[i]
                wh = (wh * 2) ** 2 * self.anchors[i].view(1, self.na, 1, 1, 2)
                outs.append(torch.cat((xy, wh, conf), 4).view(bs, -1, self.no))
            return torch.cat(outs, 1)

    model = Head().eval()
    _randomise_all(model)
    return model


def _mixed_cnn():
    """Classic-CNN odds and ends in one model: ceil-mode max pool, average pool without
    padding in the count, LRN, dilated and grouped convs, channel shuffle, PReLU/ELU/
    Softplus/tanh-GELU, GroupNorm and InstanceNorm, reflect padding, non-global adaptive
    pool, PixelShuffle, bicubic and align-corners bilinear resizes."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 16, 3, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.prelu = nn.PReLU(16)
            self.lrn = nn.LocalResponseNorm(3)
            self.c2 = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=4)
            self.gn = nn.GroupNorm(4, 16)
            self.c3 = nn.Conv2d(16, 32, 3, stride=2, padding=0)
            self.inorm = nn.InstanceNorm2d(32, affine=True)
            self.c4 = nn.Conv2d(32, 12, 1)
            self.fc = nn.Linear(6 * 2 * 2 + 3, 10)

        def forward(self, x):
            y = self.prelu(self.bn(self.c1(x)))
            y = F.max_pool2d(y, 3, 2, ceil_mode=True)
            y = self.lrn(y)
            y = F.elu(self.gn(self.c2(y)))
            b, c, h, w = y.shape
            y = y.view(b, 4, c // 4, h, w).transpose(1, 2).reshape(b, c, h, w)  # shuffle
            y = F.pad(y, (1, 2, 0, 1), mode="reflect")
            y = F.softplus(self.inorm(self.c3(y)))
            y = F.avg_pool2d(y, 3, 1, padding=1, count_include_pad=False)
            y = F.gelu(self.c4(y), approximate="tanh")
            y = F.pixel_shuffle(y, 2)  # 12 -> 3 channels, 2x spatial
            up = F.interpolate(y, scale_factor=1.5, mode="bicubic", align_corners=False)
            up2 = F.interpolate(y, size=(9, 9), mode="bilinear", align_corners=True)
            z = torch.cat([F.avg_pool2d(up, (8, 9)), F.max_pool2d(up2, 3)], 1)
            z = z[:, :, 1:, :2]  # 6 channels at 2x2 -> 24
            extra = y.mean(dim=(2, 3))
            return self.fc(torch.cat([z.flatten(1), extra], 1))

    model = Mixed().eval()
    _randomise_all(model)
    return model


SWEEP: dict[str, SweepSpec] = {
    "vit": SweepSpec(
        _hf("ViTConfig", "ViTModel", ["pixel_values"], ["last_hidden_state", "pooler_output"],
            image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128),
        _img(), ("last_hidden_state", "pooler_output"), {"pixel_values": {0: "batch"}}),
    "deit": SweepSpec(
        _hf("DeiTConfig", "DeiTForImageClassificationWithTeacher", ["pixel_values"], ["logits"],
            image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, num_labels=10,
            attn_implementation="eager"),
        _img(), ("logits",), {"pixel_values": {0: "batch"}}),
    "distilbert": SweepSpec(
        _hf("DistilBertConfig", "DistilBertModel", ["input_ids", "attention_mask"],
            ["last_hidden_state"], dim=64, n_layers=2, n_heads=4, hidden_dim=128, **_TXT),
        _tok("input_ids", "attention_mask"), ("last_hidden_state",),
        _tok_dyn("input_ids", "attention_mask")),
    "roberta": SweepSpec(
        _hf("RobertaConfig", "RobertaModel", ["input_ids", "attention_mask"],
            ["last_hidden_state", "pooler_output"], hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, pad_token_id=1, **_TXT),
        _tok("input_ids", "attention_mask"), ("last_hidden_state", "pooler_output"),
        _tok_dyn("input_ids", "attention_mask")),
    "albert": SweepSpec(
        _hf("AlbertConfig", "AlbertModel", ["input_ids", "attention_mask", "token_type_ids"],
            ["last_hidden_state", "pooler_output"], embedding_size=32, hidden_size=64,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, **_TXT),
        _tok("input_ids", "attention_mask", "token_type_ids"), ("last_hidden_state", "pooler_output"),
        _tok_dyn("input_ids", "attention_mask", "token_type_ids")),
    "electra": SweepSpec(
        _hf("ElectraConfig", "ElectraForSequenceClassification", ["input_ids", "attention_mask"],
            ["logits"], embedding_size=32, hidden_size=64, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=128, num_labels=3, **_TXT),
        _tok("input_ids", "attention_mask"), ("logits",), _tok_dyn("input_ids", "attention_mask")),
    "gpt2": SweepSpec(
        _hf("GPT2Config", "GPT2LMHeadModel", ["input_ids", "attention_mask"], ["logits"],
            {"use_cache": False}, vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
            n_positions=64, bos_token_id=0, eos_token_id=0),
        _tok("input_ids", "attention_mask"), ("logits",), _tok_dyn("input_ids", "attention_mask")),
    "llama": SweepSpec(
        _hf("LlamaConfig", "LlamaModel", ["input_ids", "attention_mask"], ["last_hidden_state"],
            {"use_cache": False}, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, **_TXT),
        _tok("input_ids", "attention_mask"), ("last_hidden_state",),
        _tok_dyn("input_ids", "attention_mask")),
    "gpt_neox": SweepSpec(
        _hf("GPTNeoXConfig", "GPTNeoXModel", ["input_ids", "attention_mask"], ["last_hidden_state"],
            {"use_cache": False}, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, rotary_pct=0.5, **_TXT),
        _tok("input_ids", "attention_mask"), ("last_hidden_state",),
        _tok_dyn("input_ids", "attention_mask")),
    "t5_encoder": SweepSpec(
        _hf("T5Config", "T5EncoderModel", ["input_ids", "attention_mask"], ["last_hidden_state"],
            vocab_size=VOCAB, d_model=64, d_kv=16, num_heads=4, d_ff=128, num_layers=2,
            feed_forward_proj="gated-gelu"),
        _tok("input_ids", "attention_mask"), ("last_hidden_state",),
        _tok_dyn("input_ids", "attention_mask")),
    "whisper_encoder": SweepSpec(
        _hf("WhisperConfig", "transformers.models.whisper.modeling_whisper.WhisperEncoder", ["input_features"], ["last_hidden_state"],
            d_model=64, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=128,
            num_mel_bins=16, max_source_positions=32, vocab_size=VOCAB),
        {"input_features": ((1, 16, 64), "float32")}, ("last_hidden_state",),
        {"input_features": {0: "batch"}}),
    "wav2vec2": SweepSpec(
        _hf("Wav2Vec2Config", "Wav2Vec2Model", ["input_values"], ["last_hidden_state"],
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4, vocab_size=32),
        {"input_values": ((1, 800), "float32")}, ("last_hidden_state",),
        {"input_values": {0: "batch", 1: "samples"}}),
    "convnext": SweepSpec(
        _hf("ConvNextConfig", "ConvNextForImageClassification", ["pixel_values"], ["logits"],
            hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, image_size=32, num_labels=10),
        _img(), ("logits",), {"pixel_values": {0: "batch"}}),
    "swin": SweepSpec(
        _hf("SwinConfig", "SwinModel", ["pixel_values"], ["last_hidden_state", "pooler_output"],
            image_size=32, patch_size=2, embed_dim=16, depths=[2, 1], num_heads=[2, 4],
            window_size=4),
        _img(), ("last_hidden_state", "pooler_output"), {"pixel_values": {0: "batch"}}),
    "mobilevit": SweepSpec(
        _hf("MobileViTConfig", "MobileViTForImageClassification", ["pixel_values"], ["logits"],
            image_size=64, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
            num_attention_heads=2, num_labels=10),
        _img(hw=64), ("logits",), {"pixel_values": {0: "batch"}}),
    "resnet_hf": SweepSpec(
        _hf("ResNetConfig", "ResNetForImageClassification", ["pixel_values"], ["logits"],
            embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], layer_type="bottleneck",
            num_labels=10),
        _img(), ("logits",), {"pixel_values": {0: "batch"}}),
    "efficientnet": SweepSpec(_efficientnet, {"input": ((1, 3, 32, 32), "float32")}, ("logits",),
                              {"input": {0: "batch"}}, hf=False),
    "unet": SweepSpec(_unet, {"input": ((1, 3, 32, 32), "float32")}, ("mask",),
                      {"input": {0: "batch"}}, hf=False),
    "yolo_head": SweepSpec(_yolo_head, {"images": ((1, 3, 64, 64), "float32")}, ("detections",),
                           {"images": {0: "batch"}}, hf=False),
    "mixed_cnn": SweepSpec(_mixed_cnn, {"input": ((1, 3, 32, 32), "float32")}, ("logits",),
                           {"input": {0: "batch"}}, hf=False),
}


def alt_shapes(name: str, batch: int = 2, seq: int = 24) -> dict[str, tuple[int, ...]]:
    """Other static shapes for SWEEP[name]'s dynamic axes: `batch` for dim 0 and `seq`
    for sequence axes (the exports are dynamic there; importing at shapes other than
    the traced ones checks that nothing traced stayed baked in)."""
    spec = SWEEP[name]
    out = {}
    for inp, (shape, _) in spec.inputs.items():
        dims = list(shape)
        for d, sym in spec.dynamic.get(inp, {}).items():
            dims[d] = batch if d == 0 else (seq if sym == "seq" else dims[d])
        out[inp] = tuple(dims)
    return out


def sweep_inputs(name: str, seed: int = 0, shapes: dict | None = None) -> dict[str, np.ndarray]:
    """Deterministic inputs for SWEEP[name] (ids < VOCAB, masks with padding at the end),
    at its static shapes or at `shapes` (input name -> shape)."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for inp, (shape, dtype) in SWEEP[name].inputs.items():
        shape = (shapes or {}).get(inp, shape)
        if dtype == "float32":
            feeds[inp] = rng.standard_normal(shape).astype(np.float32)
        elif inp == "input_ids":
            feeds[inp] = rng.integers(2, VOCAB, shape).astype(np.int64)
        elif inp == "attention_mask":
            m = np.ones(shape, dtype=np.int64)
            m[..., -3:] = 0  # padded tail: exercises the mask arithmetic
            feeds[inp] = m
        else:
            feeds[inp] = rng.integers(0, 2, shape).astype(np.int64)
    return feeds


def get_export(name: str, exporter: str = "ts", opset: int = 17) -> Path:
    """Cached ONNX export of SWEEP[name] with `exporter` ("ts" = TorchScript,
    "dynamo") at `opset`; skips (in pytest) or raises ModelUnavailable when it cannot."""
    spec = SWEEP[name]
    try:
        import torch
    except ImportError:
        _unavailable("torch is not installed (pip install torch==2.13.0)")
    versions = [torch.__version__]
    if spec.hf:
        try:
            import transformers
        except ImportError:
            _unavailable("transformers is not installed")
        versions.append(transformers.__version__)
    if exporter == "dynamo":
        try:
            import onnxscript
        except ImportError:
            _unavailable("the dynamo exporter needs onnxscript (pip install onnxscript)")
        versions.append(onnxscript.__version__)
    key = hashlib.sha256(_sweep_key(spec).encode() + "|".join(versions).encode()).hexdigest()[:12]
    stem = f"{name}-{exporter}{opset}"
    return _cached_export(stem, key, lambda tmp: _export_sweep(spec, tmp, exporter, opset))


def _sweep_key(spec: SweepSpec) -> str:
    """What an export of `spec` depends on: the shared export code and this model's
    builder (source and closure values), not the rest of this file (editing one sweep
    model re-exports only that one)."""
    import inspect

    parts = [inspect.getsource(f) for f in (_export_sweep, _randomise_all, _HFWrap, _finish)]
    parts.append(inspect.getsource(spec.build))
    for cell in spec.build.__closure__ or ():
        parts.append(repr(cell.cell_contents))
    parts.append(repr((spec.inputs, spec.outputs, spec.dynamic)))
    return "\n".join(parts)


def _export_sweep(spec: SweepSpec, path: Path, exporter: str, opset: int) -> None:
    import warnings

    import torch

    name = next(k for k, v in SWEEP.items() if v is spec)
    model = spec.build(opset) if spec.hf else spec.build()
    args = tuple(torch.from_numpy(v) for v in sweep_inputs(name).values())
    names = list(spec.inputs)
    dyn = dict(spec.dynamic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            torch.onnx.export(
                model, args, str(path), input_names=names, output_names=list(spec.outputs),
                dynamic_axes=dyn, opset_version=opset, dynamo=False,
            )
        else:
            auto = torch.export.Dim.AUTO
            shapes = tuple({d: auto for d in dyn.get(n, {})} for n in names)
            try:
                torch.onnx.export(
                    model, args, str(path), input_names=names,
                    output_names=list(spec.outputs), dynamic_shapes=shapes,
                    opset_version=opset, dynamo=True, external_data=False, verbose=False,
                )
            except Exception:  # noqa: BLE001
                # some models (T5, Swin in torch 2.13) only export at static shapes
                torch.onnx.export(
                    model, args, str(path), input_names=names,
                    output_names=list(spec.outputs), opset_version=opset, dynamo=True,
                    external_data=False, verbose=False,
                )


# --------------------------------------------------------------------------------------
# training-mode exports (graph-autodiff, docs/training.md)
# --------------------------------------------------------------------------------------
#
#     model, feeds = training_model("resnet18_train")   # torch module (train mode), inputs
#     path = get_training_export("resnet18_train")      # its training-mode ONNX export
#
# Exported with `training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False`
# at static shapes (batch 2): initializer names are the torch parameter names and
# BatchNormalization keeps training_mode=1. Dropout probabilities are 0 so that torch's
# training step is deterministic (graph-autodiff treats Dropout as identity).

TRAINING_MODELS: tuple[str, ...] = (
    "resnet18_train", "mobilenet_v2_train", "bert_2layer_train", "gpt2_2layer_train"
)
TRAIN_BATCH = 2
TRAIN_SEQ = 8


def _resnet18(width: int, classes: int = 10):
    """ResNet-18's layout (7x7/2 stem, 3x3/2 max pool, four stages of two basic blocks,
    global pool, linear) with stage widths width * (1, 2, 4, 8)."""
    from torch import nn

    Basic = resnet_basic_block()
    layers = [nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = width
    for i, mult in enumerate((1, 2, 4, 8)):
        cout = width * mult
        layers += [Basic(cin, cout, 1 if i == 0 else 2), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def training_model(name: str):
    """(torch module in train mode, {input name: np.ndarray}) for a TRAINING_MODELS name;
    deterministic (seeded), so the test's module equals the exported one."""
    import torch

    if name not in TRAINING_MODELS:
        raise KeyError(f"unknown training model '{name}' (known: {', '.join(TRAINING_MODELS)})")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name in ("resnet18_train", "mobilenet_v2_train"):
        if name == "resnet18_train":
            model = _resnet18(16)
        else:
            model = mobilenet_v2_model(16, ((1, 8, 1, 1), (6, 16, 2, 2), (6, 24, 1, 2)), 64, 10)
        _randomise(model)
        hw = 64 if name == "resnet18_train" else 32  # ResNet-18: 2x2 in its last stage
        feeds = {"input": rng.standard_normal((TRAIN_BATCH, 3, hw, hw)).astype(np.float32)}
        return model.train(), feeds
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    ids = rng.integers(0, VOCAB, (TRAIN_BATCH, TRAIN_SEQ)).astype(np.int64)
    mask = np.ones((TRAIN_BATCH, TRAIN_SEQ), np.int64)
    mask[1, -2:] = 0  # a padded position: the attention mask takes part
    if name == "bert_2layer_train":
        cfg = transformers.BertConfig(
            vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=128, max_position_embeddings=64, attn_implementation="eager",
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        )
        inner = transformers.BertModel(cfg, add_pooling_layer=False)
        in_names = ("input_ids", "attention_mask", "token_type_ids")
        feeds = {"input_ids": ids, "attention_mask": mask,
                 "token_type_ids": np.zeros_like(ids)}
    else:
        cfg = transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64, use_cache=False,
            attn_implementation="eager", bos_token_id=0, eos_token_id=0,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )
        inner = transformers.GPT2Model(cfg)
        in_names = ("input_ids", "attention_mask")
        feeds = {"input_ids": ids, "attention_mask": mask}
    _randomise_all(inner)
    extra = {"use_cache": False} if name == "gpt2_2layer_train" else {}
    return _HFWrap(inner, in_names, ("last_hidden_state",), **extra).train(), feeds


TRAINING_OUTPUTS: dict[str, str] = {
    "resnet18_train": "logits", "mobilenet_v2_train": "logits",
    "bert_2layer_train": "last_hidden_state", "gpt2_2layer_train": "last_hidden_state",
}


def get_training_export(name: str) -> Path:
    """Path of the cached training-mode ONNX export of `name` (a TRAINING_MODELS name).
    The cache key hashes this section of the file only, so editing the zoo's other
    generators does not re-export these."""
    try:
        import torch
    except ImportError:
        _unavailable("torch is not installed (pip install torch==2.13.0)")
    versions = [torch.__version__]
    if "bert" in name or "gpt2" in name:
        try:
            import transformers
        except ImportError:
            _unavailable("transformers is not installed")
        versions.append(transformers.__version__)
    text = Path(__file__).read_text()
    section = text[text.index("# training-mode exports (graph-autodiff"):]
    key = hashlib.sha256((section + "|".join(versions)).encode()).hexdigest()[:12]

    def export(path: Path) -> None:
        import warnings

        model, feeds = training_model(name)
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, args, str(path), input_names=list(feeds),
                output_names=[TRAINING_OUTPUTS[name]], opset_version=17, dynamo=False,
                training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
            )

    return _cached_export(name, key, export)


# --------------------------------------------------------------------------------------
# The onnx wheel's classic model zoo (IR version 3, opset 9; weights 0.02 everywhere)
# --------------------------------------------------------------------------------------

LIGHT_MODELS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)
"""The nine `light_*.onnx` CNNs shipped in `onnx/backend/test/data/light/`."""

LIGHT_CHAINS = ("bvlc_alexnet", "vgg19", "zfnet512")
"""The chain-shaped ones (a single topological order up to the weight constants)."""


def light_model_path(name: str) -> Path:
    """Path of `light_NAME.onnx` inside the installed onnx wheel."""
    import onnx

    path = Path(onnx.__file__).parent / "backend/test/data/light" / f"light_{name}.onnx"
    if not path.exists():
        _unavailable(f"{path} is not in this onnx wheel")
    return path


def light_reference(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The input ONNX's backend test feeds `light_NAME` (arange(n)/n in the input's
    shape) and the bundled expected output `light_NAME_output_0.pb`."""
    import onnx
    from onnx import numpy_helper

    path = light_model_path(name)
    model = onnx.load(str(path))
    inits = {t.name for t in model.graph.initializer}
    vi = next(i for i in model.graph.input if i.name not in inits)
    shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                  for d in vi.type.tensor_type.shape.dim)
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype(np.float32)
    expected = numpy_helper.to_array(
        onnx.load_tensor(str(path).replace(".onnx", "_output_0.pb"))
    )
    return x, expected


# --------------------------------------------------------------------------------------
# more training-mode exports: inception blocks with ceil-mode pools, a vision transformer
# --------------------------------------------------------------------------------------
#
#     model, feeds = training_model_2("inception_train")
#     path = get_training_export_2("inception_train")
#
# As the section above (batch 2, `TrainingMode.TRAINING`, no constant folding), with
# its own cache key (a hash of this section only).
#
# * `inception_train`  GoogLeNet's layout at width 1/8 and 56x56 input: conv-BN-ReLU
#   units, 3x3/2 max pools with ceil_mode (28 -> 14 -> 7 -> 3: the last window of
#   the 7 and 3 rows reaches past the edge), inception
#   blocks (1x1 | 1x1-3x3 | 1x1-3x3 | 3x3/1 ceil-mode max pool-1x1, concatenated),
#   a 2x2/2 ceil-mode pool (3 -> 2) before the last block, global average pool, linear.
# * `vit_train`  torchvision's VisionTransformer layout (32x32 image, 8x8 patches,
#   hidden 32, 2 layers, 2 heads, 10 classes) on nn.MultiheadAttention: its export
#   holds float constants of rank 1 that the exporter generated (the attention scale,
#   `/layers/.../Sqrt_1_output_0`) next to the parameters.

TRAINING_MODELS_2: tuple[str, ...] = ("inception_train", "vit_train")


def _inception_net(width: int = 8, classes: int = 10):
    """GoogLeNet (torchvision's layout without aux heads) with channels / `64 // width`."""
    import torch
    from torch import nn

    def unit(cin, cout, k, stride=1, pad=0):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride, pad, bias=False),
                             nn.BatchNorm2d(cout, eps=0.001), nn.ReLU())

    class Inception(nn.Module):
        def __init__(self, cin, c1, c3r, c3, c5r, c5, cp):
            super().__init__()
            self.b1 = unit(cin, c1, 1)
            self.b2 = nn.Sequential(unit(cin, c3r, 1), unit(c3r, c3, 3, pad=1))
            self.b3 = nn.Sequential(unit(cin, c5r, 1), unit(c5r, c5, 3, pad=1))
            self.b4 = nn.Sequential(nn.MaxPool2d(3, 1, 1, ceil_mode=True), unit(cin, cp, 1))

        def forward(self, x):
            return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(x)], 1)

    w = width
    return nn.Sequential(
        unit(3, 64 // w, 7, 2, 3), nn.MaxPool2d(3, 2, ceil_mode=True),
        unit(64 // w, 64 // w, 1), unit(64 // w, 192 // w, 3, pad=1),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Inception(192 // w, 8, 12, 16, 4, 8, 4),
        Inception(36, 16, 16, 24, 4, 12, 8),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Inception(60, 24, 12, 26, 4, 6, 8),
        Inception(64, 16, 16, 32, 4, 8, 8),
        nn.MaxPool2d(2, 2, ceil_mode=True),
        Inception(64, 32, 20, 40, 4, 16, 16),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(104, classes),
    )


def _vit(image: int, patch: int, hidden: int, layers: int, heads: int, mlp: int, classes: int):
    """torchvision's VisionTransformer layout: patch conv, class token, position
    embedding, pre-norm encoder layers (nn.MultiheadAttention, GELU MLP), final
    LayerNorm, linear head on the class token; its Dropout modules (p = 0) export as
    training-mode Dropout nodes, which tell the importer the export is a training one."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
            self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(hidden, mlp), nn.GELU(), nn.Dropout(0.0),
                                     nn.Linear(mlp, hidden), nn.Dropout(0.0))

        def forward(self, x):
            h = self.ln_1(x)
            x = x + self.self_attention(h, h, h, need_weights=False)[0]
            return x + self.mlp(self.ln_2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_proj = nn.Conv2d(3, hidden, patch, patch)
            self.class_token = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
            n = (image // patch) ** 2 + 1
            self.pos_embedding = nn.Parameter(torch.randn(1, n, hidden) * 0.02)
            self.layers = nn.Sequential(*[Layer() for _ in range(layers)])
            self.ln = nn.LayerNorm(hidden, eps=1e-6)
            self.head = nn.Linear(hidden, classes)

        def forward(self, x):
            x = self.conv_proj(x).flatten(2).transpose(1, 2)
            x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], 1)
            x = self.ln(self.layers(x + self.pos_embedding))
            return self.head(x[:, 0])

    return ViT()


def training_model_2(name: str):
    """(torch module in train mode, {input name: np.ndarray}) for a TRAINING_MODELS_2
    name; deterministic (seeded), so the test's module equals the exported one."""
    import torch

    if name not in TRAINING_MODELS_2:
        raise KeyError(f"unknown training model '{name}' (known: {', '.join(TRAINING_MODELS_2)})")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "inception_train":
        model = _inception_net()
        _randomise(model)
        feeds = {"input": rng.standard_normal((TRAIN_BATCH, 3, 56, 56)).astype(np.float32)}
        return model.train(), feeds
    model = _vit(32, 8, 32, 2, 2, 64, 10)
    _randomise_all(model)
    feeds = {"input": rng.standard_normal((TRAIN_BATCH, 3, 32, 32)).astype(np.float32)}
    return model.train(), feeds


def get_training_export_2(name: str) -> Path:
    """Path of the cached training-mode ONNX export of a TRAINING_MODELS_2 name (output
    `logits`)."""
    try:
        import torch
    except ImportError:
        _unavailable("torch is not installed (pip install torch==2.13.0)")
    versions = [torch.__version__]
    text = Path(__file__).read_text()
    section = text[text.index("# more training-mode exports: inception"):]
    key = hashlib.sha256((section + "|".join(versions)).encode()).hexdigest()[:12]

    def export(path: Path) -> None:
        import warnings

        model, feeds = training_model_2(name)
        args = tuple(torch.from_numpy(v) for v in feeds.values())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, args, str(path), input_names=list(feeds), output_names=["logits"],
                opset_version=17, dynamo=False,
                training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
            )

    return _cached_export(name, key, export)


def highres_cnn(path, hw: int = 2048, widths=(4, 16, 32, 64, 128, 256, 384), pool: int = 4,
                classes: int = 100, depthwise: int = 4, seed: int = 0) -> None:
    """A plain CNN on a large image (docs/mesh.md, "Memory reuse": activations far
    above its weights), written with onnx.helper: a stride-2 3 x 3 stem conv to
    widths[0], batch norm and relu, `depthwise` depthwise 3 x 3 convs with batch norm
    and relu at the stem's resolution, a `pool` x `pool` max pool, then for each
    further width a stride-2 3 x 3 conv, batch norm and relu, a global average pool
    and a classifier gemm. At the defaults (a 2048 x 2048 input): 5.3 MB of weights,
    0.36 G MACs, activations of 16.8 MB at the stem's 1024 x 1024."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    x, cin = "x", 3
    for i, cout in enumerate(widths):
        w = const(f"w{i}", rng.standard_normal((cout, cin, 3, 3)) * (2.0 / (9 * cin)) ** 0.5)
        bn = [const(f"bn{i}_{k}", v) for k, v in (("g", rng.random(cout) + 0.5), ("b", rng.standard_normal(cout) * 0.1),
                                                  ("m", rng.standard_normal(cout) * 0.1), ("v", rng.random(cout) + 0.5))]
        nodes += [helper.make_node("Conv", [x, w], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1], strides=[2, 2]),
                  helper.make_node("BatchNormalization", [f"c{i}", *bn], [f"n{i}"], name=f"bn{i}"),
                  helper.make_node("Relu", [f"n{i}"], [f"r{i}"], name=f"relu{i}")]
        x, cin = f"r{i}", cout
        for d in range(depthwise if i == 0 else 0):  # cheap layers at the stem's resolution
            w = const(f"dw{d}", rng.standard_normal((cout, 1, 3, 3)) * (2.0 / 9) ** 0.5)
            bn = [const(f"dbn{d}_{k}", v) for k, v in (("g", rng.random(cout) + 0.5),
                                                      ("b", rng.standard_normal(cout) * 0.1),
                                                      ("m", rng.standard_normal(cout) * 0.1),
                                                      ("v", rng.random(cout) + 0.5))]
            nodes += [helper.make_node("Conv", [x, w], [f"dc{d}"], name=f"dwconv{d}", pads=[1, 1, 1, 1], group=cout),
                      helper.make_node("BatchNormalization", [f"dc{d}", *bn], [f"dn{d}"], name=f"dbn{d}"),
                      helper.make_node("Relu", [f"dn{d}"], [f"dr{d}"], name=f"drelu{d}")]
            x = f"dr{d}"
        if i == 0:
            nodes.append(helper.make_node("MaxPool", [x], ["p0"], name="pool0", kernel_shape=[pool, pool],
                                          strides=[pool, pool]))
            x = "p0"
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"),
              helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
              helper.make_node("Gemm", ["flat", const("fc_w", rng.standard_normal((classes, cin)) * cin ** -0.5),
                                        const("fc_b", rng.standard_normal(classes) * 0.1)], ["logits"],
                               name="fc", transB=1)]
    graph = helper.make_graph(nodes, "highres_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    onnx.save(model, str(path))


def dense_cnn(path, hw: int = 64, stem: int = 16, growth: int = 8, blocks=(4, 4), classes: int = 10,
              seed: int = 0) -> None:
    """A small DenseNet (DenseNet-121's layout, docs/mesh.md "Memory reuse"), written
    with onnx.helper: a stride-2 3 x 3 stem conv, then dense blocks whose every layer
    concatenates all earlier feature maps of its block and applies batch norm, relu,
    a 1 x 1 conv to 4 x `growth` channels, batch norm, relu and a 3 x 3 conv to
    `growth` channels; a transition (batch norm, relu, 1 x 1 conv halving the
    channels, 2 x 2 average pool) between blocks; a global average pool and a
    classifier gemm."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []
    count = [0]

    def const(arr):
        count[0] += 1
        name = f"k{count[0]}"
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def node(op, ins, **attrs):
        count[0] += 1
        out = f"t{count[0]}"
        nodes.append(helper.make_node(op, ins, [out], name=f"{op.lower()}{count[0]}", **attrs))
        return out

    def conv(x, cin, cout, k, stride=1):
        w = const(rng.standard_normal((cout, cin, k, k)) * (2.0 / (k * k * cin)) ** 0.5)
        return node("Conv", [x, w], pads=[k // 2] * 4, strides=[stride, stride])

    def bn_relu(x, c):
        bn = [const(v) for v in (rng.random(c) + 0.5, rng.standard_normal(c) * 0.1, rng.standard_normal(c) * 0.1,
                                 rng.random(c) + 0.5)]
        return node("Relu", [node("BatchNormalization", [x, *bn])])

    x, c = conv("x", 3, stem, 3, 2), stem
    for b, layers in enumerate(blocks):
        feats = [x]
        for _ in range(layers):
            cat = node("Concat", feats, axis=1) if len(feats) > 1 else feats[0]
            y = conv(bn_relu(cat, c), c, 4 * growth, 1)
            feats.append(conv(bn_relu(y, 4 * growth), 4 * growth, growth, 3))
            c += growth
        x = node("Concat", feats, axis=1)
        if b < len(blocks) - 1:
            x = node("AveragePool", [conv(bn_relu(x, c), c, c // 2, 1)], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = node("Flatten", [node("GlobalAveragePool", [bn_relu(x, c)])])
    nodes.append(helper.make_node("Gemm", [x, const(rng.standard_normal((classes, c)) * c ** -0.5),
                                           const(rng.standard_normal(classes) * 0.1)], ["logits"], name="fc",
                                  transB=1))
    graph = helper.make_graph(nodes, "dense_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, hw, hw])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, classes])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10), str(path))
