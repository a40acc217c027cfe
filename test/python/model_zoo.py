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
    path = CACHE / f"{name}-{key}.onnx"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.onnx")
    try:
        _EXPORTERS[name](tmp)
        _finish(tmp)
        os.replace(tmp, path)
        for old in CACHE.glob(f"{name}-*.onnx"):
            if old != path:
                old.unlink(missing_ok=True)
    except ModelUnavailable:
        raise
    except Exception as e:  # noqa: BLE001 - report as unavailable, keep the cause
        tmp.unlink(missing_ok=True)
        raise ModelUnavailable(f"exporting {name} failed: {type(e).__name__}: {e}") from e
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


def _tiny_resnet(path: Path) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)

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

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(3, 2, 1),
        Basic(16, 16, 1), Basic(16, 32, 2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )
    _export_cnn(model, path, "tiny_resnet")


def _mobilenet_v2(path: Path) -> None:
    import torch
    from torch import nn

    torch.manual_seed(0)

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

    model = nn.Sequential(
        *cbr(3, 16, 3, 2),
        Inverted(16, 8, 1, 1), Inverted(8, 16, 2, 6), Inverted(16, 16, 1, 6),
        Inverted(16, 24, 2, 6),
        *cbr(24, 64, 1, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, 10),
    )
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
            # GPT-2 needs attention_mask by keyword with the legacy exporter (NOTES.md)
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
