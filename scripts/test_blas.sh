#!/usr/bin/env bash
# The tests marked `blas_sensitive` (model comparisons against onnxruntime and torch)
# under a second OpenBLAS kernel family: their tolerances must hold for any correct
# float32 summation order (docs/architecture.md, "Numerical tolerances in the tests").
#   BLAS_CORETYPE=Haswell bash scripts/test_blas.sh   picks the family; by default
#   Sandybridge, or Haswell when the environment already runs Sandybridge kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
NNX_EXTRAS=test,ray NNX_MODELS=${NNX_MODELS:-1} bash scripts/setup.sh
if [ -z "${BLAS_CORETYPE:-}" ]; then
  if [ "${OPENBLAS_CORETYPE:-}" = Sandybridge ]; then BLAS_CORETYPE=Haswell; else BLAS_CORETYPE=Sandybridge; fi
fi
echo "blas_sensitive tests under OPENBLAS_CORETYPE=$BLAS_CORETYPE"
OPENBLAS_CORETYPE=$BLAS_CORETYPE .venv/bin/python -m pytest -q -p no:cacheprovider \
  -m blas_sensitive test/python "$@"
