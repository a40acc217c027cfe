#!/usr/bin/env bash
# The demo: set up, import the bundled ONNX model, run a pipeline, interpret it, print the result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/demo.py "$@"
