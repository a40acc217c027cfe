"""ONNX backend node tests through nnx-import + the interpreter (issue 2).

The node test data is regenerated once into cache/onnx-node-tests (git-ignored; a
lock file keeps parallel workers from colliding). Every node test whose ops are all
supported (a graph op or importer-folded, and a kernel) is one test case: import
the model with nnx.importer at the test's input shapes, interpret it, compare with
the expected outputs (rtol 1e-4, atol 1e-5 for floats; exact for integers and
booleans). `bench/onnx_node_report.py` prints the pass counts per op.
"""

from __future__ import annotations

import pytest

from nnx.interp import onnx_node_tests as T

# Cases that fail for a known reason outside the interpreter's control.
KNOWN_FAILURES: dict[str, str] = {
    # expected values are written with 4 decimals in the test source (0.1511 vs 0.151056)
    "test_averagepool_2d_ceil_last_window_starts_on_pad": "expected data rounded to 1e-4",
    # importer/dialect gaps (not the interpreter): training-mode BatchNormalization has
    # 3 results, graph.batch_normalization 1; Range over bfloat16 does not fold.
    "test_batchnorm_epsilon_training_mode": "graph.batch_normalization has one result",
    "test_batchnorm_example_training_mode": "graph.batch_normalization has one result",
    "test_range_bfloat16_type_positive_delta": "bfloat16 not supported by nnx.types",
}

# A reason starting like this means nnx.types has no such element type yet
# (bfloat16, float8/float4, int4/int2, string): expected to fail until it has.
UNSUPPORTED_TYPE = "unsupported element type"


def _cases() -> list[T.Case]:
    try:
        node_dir = T.ensure_data()
    except Exception as e:  # noqa: BLE001 - report at collection as a skip
        pytest.skip(f"cannot generate ONNX node test data: {e}", allow_module_level=True)
    return T.selected_cases(node_dir)


CASES = _cases()


@pytest.fixture(scope="session")
def node_test_dir():
    """The generated node test data (generated once per cache, under a lock)."""
    return T.ensure_data()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node(case: T.Case, node_test_dir) -> None:
    why = T.check_case(case)
    if why is not None and case.name in KNOWN_FAILURES:
        pytest.xfail(KNOWN_FAILURES[case.name] + f" ({why})")
    if why is not None and why.startswith(UNSUPPORTED_TYPE):
        pytest.xfail(why)
    assert why is None, why
