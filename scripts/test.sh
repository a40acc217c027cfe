#!/usr/bin/env bash
# The whole test suite: lit (FileCheck) suites and pytest. Sets everything up first.
set -euo pipefail
cd "$(dirname "$0")/.."
NNX_EXTRAS=test,ray NNX_MODELS=${NNX_MODELS:-1} bash scripts/setup.sh
# mlir-opt-19 checks that our generic output is valid MLIR (skipped with a reason if absent).
if ! command -v mlir-opt-19 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends mlir-19-tools) >/dev/null 2>&1 \
    || echo "note: could not install mlir-19-tools; MLIR compatibility tests will be skipped"
fi
export PATH="$PWD/.venv/bin:$PATH:/usr/lib/llvm-19/bin"
status=0
.venv/bin/lit -sv test || status=1
.venv/bin/python -m pytest -q -p no:cacheprovider test/python "$@" || status=1
exit $status
