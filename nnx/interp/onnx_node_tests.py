"""The ONNX backend node tests as a check of the interpreter (issue 2).

onnx >= 1.23 wheels ship no node test data; `ensure_data` regenerates it once into a
cache directory (`onnx.backend.test.case.node.collect_testcases()` fed to
`cmd_tools.generate_data`, ~8 s), under a lock file so that parallel test workers do
not collide. `run_case` imports one test model with the nnx importer, interprets it
and compares with the expected outputs. Used by test/python/test_onnx_node_tests.py
and bench/onnx_node_report.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REQUIRED_OPS = frozenset(
    """Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Reciprocal Erf Tanh Sigmoid Relu LeakyRelu
    Clip HardSigmoid HardSwish Softmax LayerNormalization BatchNormalization Conv
    ConvTranspose Gemm MatMul MaxPool AveragePool GlobalAveragePool ReduceMean ReduceSum
    ReduceMax Reshape Flatten Transpose Concat Split Slice Gather GatherElements GatherND
    Squeeze Unsqueeze Expand Where Equal Less LessOrEqual Greater GreaterOrEqual And Or Not
    Cast Resize Pad Min Max Identity Dropout Range Tile ConstantOfShape""".split()
)
"""The operators issue 2 requires (the 95% target counts tests using only these)."""

RTOL = 1e-4
ATOL = 1e-5

_MARKER = "nnx-generated"


def default_cache_dir() -> Path:
    root = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("NNX_NODE_TEST_DIR", root / "cache" / "onnx-node-tests"))


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def ensure_data(cache_dir: Path | None = None) -> Path:
    """Generate the node test data once; return the directory holding the cases."""
    import onnx

    cache_dir = Path(cache_dir or default_cache_dir())
    marker = cache_dir / _MARKER
    want = f"onnx {onnx.__version__}\n"
    if marker.exists() and marker.read_text() == want:
        return cache_dir / "node"
    with _locked(cache_dir.parent / (cache_dir.name + ".lock")):
        if marker.exists() and marker.read_text() == want:
            return cache_dir / "node"
        import argparse
        import shutil

        import onnx.backend.test.case.model as model_test
        from onnx.backend.test import cmd_tools
        from onnx.backend.test.case import node

        if (cache_dir / "node").exists():
            shutil.rmtree(cache_dir / "node")
        saved = cmd_tools.model_test.collect_testcases
        cmd_tools.model_test.collect_testcases = lambda *a, **k: node.collect_testcases()
        try:
            cmd_tools.generate_data(argparse.Namespace(output=str(cache_dir)))
        finally:
            cmd_tools.model_test.collect_testcases = saved
        _ = model_test
        marker.write_text(want)
    return cache_dir / "node"


@dataclass
class Case:
    name: str
    path: Path
    ops: frozenset[str]

    @property
    def model_path(self) -> Path:
        return self.path / "model.onnx"


def list_cases(node_dir: Path) -> list[Case]:
    import onnx

    cases = []
    for d in sorted(node_dir.iterdir()):
        mp = d / "model.onnx"
        if not mp.exists():
            continue
        m = onnx.load(str(mp), load_external_data=False)
        ops = set()
        local = {f.name for f in m.functions}
        for n in m.graph.node:
            if n.domain not in ("", "ai.onnx") or n.op_type in local:
                ops.add(f"{n.domain}:{n.op_type}")
            else:
                ops.add(n.op_type)
            for a in n.attribute:
                if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    ops.add("<subgraph>")
        for vi in list(m.graph.input) + list(m.graph.output):
            if not vi.type.HasField("tensor_type"):
                ops.add("<non-tensor>")
        cases.append(Case(d.name, d, frozenset(ops)))
    return cases


def load_data(case: Case, index: int = 0):
    """(inputs by graph input name, expected outputs in order) of a test data set."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(str(case.model_path), load_external_data=False)
    init = {i.name for i in m.graph.initializer}
    in_names = [i.name for i in m.graph.input if i.name not in init]
    ds = case.path / f"test_data_set_{index}"

    def read(prefix: str) -> list[np.ndarray]:
        files = sorted(
            ds.glob(f"{prefix}_*.pb"), key=lambda p: int(re.findall(r"\d+", p.stem)[-1])
        )
        out = []
        for f in files:
            t = onnx.TensorProto()
            t.ParseFromString(f.read_bytes())
            out.append(numpy_helper.to_array(t))
        return out

    inputs = dict(zip(in_names, read("input")))
    return m, inputs, read("output")


CONVERSION_OPS = frozenset({"Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "Constant"})
"""A case made of these only checks a conversion: narrow floats must match exactly."""


def compare(
    expected: list[np.ndarray], actual: list[np.ndarray], exact_narrow: bool = True
) -> str | None:
    """None when equal within tolerance (exact for integers/bools), else why not.

    bfloat16/float8/float4 results (ml_dtypes) are compared bit for bit (NaN == NaN)
    when `exact_narrow`, else within 2 units in the last place of their type: ONNX's
    reference evaluator runs e.g. MatMul in bfloat16 arithmetic where nnx (like
    onnxruntime) accumulates in float32 and rounds once.
    """
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        a = np.asarray(a)
        if e.shape != a.shape:
            return f"output {i}: shape {list(a.shape)}, expected {list(e.shape)}"
        if e.dtype != a.dtype:
            return f"output {i}: dtype {a.dtype}, expected {e.dtype}"
        if e.dtype.kind in "fc":
            # float16 carries ~3 decimal digits: compare it at its own resolution
            rtol = 1e-3 if e.dtype == np.float16 else RTOL
            if not np.allclose(a, e, rtol=rtol, atol=ATOL, equal_nan=True):
                with np.errstate(all="ignore"):
                    err = np.nanmax(np.abs(a.astype(np.float64) - e))
                return f"output {i}: max abs error {err:.3g}"
        elif e.dtype.kind == "V" or e.dtype.name.startswith(("float8", "float4", "bfloat")):
            # ml_dtypes (bfloat16, float8...): exact (or within 2 ulp), NaN == NaN
            a32, e32 = a.astype(np.float32), e.astype(np.float32)
            if exact_narrow:
                ok = np.array_equal(a32, e32, equal_nan=True)
            else:
                import ml_dtypes

                fi = ml_dtypes.finfo(e.dtype)
                ok = np.allclose(a32, e32, rtol=2 * float(fi.eps), atol=float(fi.smallest_normal),
                                 equal_nan=True)
            if not ok:
                return f"output {i}: values differ ({int(np.sum(a32 != e32))} elements)"
        elif not np.array_equal(a, e):
            return f"output {i}: values differ ({int(np.sum(a != e))} elements)"
    return None


# ---- running one case ---------------------------------------------------------------------


def run_direct(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run the kernels straight on the ONNX nodes (no importer): a kernel check."""
    from onnx import helper, numpy_helper

    from nnx.interp.kernels import NUM_OUTPUTS_ATTR, run_kernel

    env: dict[str, np.ndarray] = dict(inputs)
    for t in model.graph.initializer:
        env[t.name] = numpy_helper.to_array(t)
    for n in model.graph.node:
        attrs = {}
        for a in n.attribute:
            v = helper.get_attribute_value(a)
            if hasattr(v, "dims"):
                v = numpy_helper.to_array(v)
            elif isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode() for x in v]
            attrs[a.name] = v
        attrs[NUM_OUTPUTS_ATTR] = len(n.output)
        ins = [env[i] if i else None for i in n.input]
        outs = run_kernel(n.op_type, ins, attrs)
        for name, v in zip(n.output, outs):
            if name:
                env[name] = np.asarray(v)
    return [env[o.name] for o in model.graph.output]


# Operand positions that determine result shapes (or static attributes): nnx's types
# are static, so a node test's graph input feeding one of these is frozen into an
# initializer (its test value) before import, as a static-shape compiler must.
STATIC_OPERANDS: dict[str, tuple[int, ...] | str] = {
    "Reshape": (1,),
    "Expand": (1,),
    "Tile": (1,),
    "Slice": (1, 2, 3, 4),
    "Resize": (1, 2, 3),
    "Upsample": (1,),
    "Pad": (1, 2, 3),
    "Split": (1,),
    "Squeeze": (1,),
    "Unsqueeze": (1,),
    "TopK": (1,),
    "ConstantOfShape": (0,),
    "Range": (0, 1, 2),
    "CumSum": (1,),
    "OneHot": (1,),
    "Trilu": (1,),
    "Dropout": (1, 2),
    "ReduceSum": (1,),
    "ReduceMean": (1,),
    "ReduceMax": (1,),
    "ReduceMin": (1,),
    "ReduceProd": (1,),
    "ReduceL1": (1,),
    "ReduceL2": (1,),
    "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,),
    "ReduceSumSquare": (1,),
    "NonZero": (0,),
    "Compress": (1,),
}


def freeze_static_inputs(model, inputs: dict[str, np.ndarray]):
    """(model with shape-determining graph inputs made initializers, remaining inputs)."""
    from onnx import numpy_helper

    producer = {o: n for n in model.graph.node for o in n.output}
    frozen: set[str] = set()
    seen: set[str] = set()
    work = [
        n.input[i]
        for n in model.graph.node
        for i in STATIC_OPERANDS.get(n.op_type, ())
        if i < len(n.input) and n.input[i]
    ]
    while work:  # graph inputs upstream of a shape-determining operand
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in inputs:
            frozen.add(v)
        elif v in producer and producer[v].op_type not in ("Shape", "Size"):
            work.extend(i for i in producer[v].input if i)
    if not frozen:
        return model, inputs
    import copy

    m = copy.deepcopy(model)
    keep = [vi for vi in m.graph.input if vi.name not in frozen]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    for name in sorted(frozen):
        m.graph.initializer.append(numpy_helper.from_array(inputs[name], name))
    return m, {k: v for k, v in inputs.items() if k not in frozen}


def run_imported(case: Case, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Import the case's model with the nnx importer, then interpret it."""
    import onnx

    from nnx.importer import import_model
    from nnx.interp.interpreter import run_module

    model = onnx.load(str(case.model_path))
    model, inputs = freeze_static_inputs(model, inputs)
    shapes = {k: tuple(v.shape) for k, v in inputs.items()}
    module = import_model(model, shapes, None, str(case.model_path))
    results = run_module(module, inputs)
    return list(results.values())


# ---- selection ---------------------------------------------------------------------------

IMPORTER_HANDLED = frozenset({"Constant", "Shape", "Size"})
"""ONNX ops the importer always resolves (folds) instead of emitting a graph op."""


def supported_ops() -> frozenset[str]:
    """ONNX ops that both have a graph op (or are folded by the importer) and a kernel."""
    from nnx.dialects.graph import ONNX_OPS
    from nnx.interp.kernels import KERNELS

    return frozenset((set(ONNX_OPS) | IMPORTER_HANDLED) & (set(KERNELS) | {"Constant"}))


def selected_cases(node_dir: Path) -> list[Case]:
    """Every node test whose ops are all supported."""
    sup = supported_ops()
    return [c for c in list_cases(node_dir) if c.ops and c.ops <= sup]


def is_required(case: Case) -> bool:
    """True when all of the case's ops are in issue 2's list (Constant counts as in)."""
    return case.ops <= (REQUIRED_OPS | {"Constant", "Shape", "Size"})


def check_case(case: Case) -> str | None:
    """None when the case passes through import + interpretation, else the reason."""
    from nnx.interp.interpreter import InterpError
    from nnx.ir_io import UserError

    _, inputs, expected = load_data(case)
    try:
        actual = run_imported(case, inputs)
    except (UserError, InterpError) as e:
        return str(e).splitlines()[0]
    return compare(expected, actual, exact_narrow=case.ops <= CONVERSION_OPS)
