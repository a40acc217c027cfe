#!/usr/bin/env bash
# Creates .venv and installs nnx into it (editable). Idempotent; used by demo.sh and test.sh.
#   NNX_EXTRAS=test  also installs the test tools (pytest, lit, FileCheck, onnxruntime, ...);
#   NNX_EXTRAS=test,ray  also Ray, for nnx-sweep --ray (scripts/test.sh uses this)
#   NNX_MODELS=1     also installs torch 2.13.0 (CPU) + transformers for the real-model tests
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.nnx-installed-${NNX_EXTRAS:-none}-${NNX_MODELS:-0}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  if [ -n "${NNX_EXTRAS:-}" ]; then
    .venv/bin/python -m pip install -q -e ".[${NNX_EXTRAS}]"
  else
    .venv/bin/python -m pip install -q -e .
  fi
  if [ "${NNX_MODELS:-0}" = 1 ]; then
    # torch 2.13.0's CPU wheel is on this machine's disk; any other version is a CUDA download.
    .venv/bin/python -m pip install -q torch==2.13.0 "transformers>=4.40"
  fi
  touch "$stamp"
fi
