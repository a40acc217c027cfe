#!/usr/bin/env bash
# The whole test suite: lit (FileCheck) suites and pytest. Sets everything up first.
set -euo pipefail
cd "$(dirname "$0")/.."
NNX_EXTRAS=test,ray NNX_MODELS=${NNX_MODELS:-1} bash scripts/setup.sh
# mlir-opt-19 checks that our generic output is valid MLIR. Installed when this user may:
# a busy apt/dpkg (another install holding its lock) is waited for, not skipped.
if ! command -v mlir-opt-19 >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt_wait=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
  log=$(mktemp)
  for attempt in 1 2 3 4 5 6 7 8 9 10; do  # apt-get update waits on its own lock: retry
    if apt-get "${apt_wait[@]}" update -qq >"$log" 2>&1 &&
       apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends mlir-19-tools >>"$log" 2>&1; then
      break
    fi
    grep -qi 'lock' "$log" || break  # only a held lock is worth waiting for
    sleep 30
  done
  command -v mlir-opt-19 >/dev/null 2>&1 || {
    echo "note: could not install mlir-19-tools; MLIR compatibility tests will be skipped:"
    tail -n 3 "$log"
  }
  rm -f "$log"
fi
export PATH="$PWD/.venv/bin:$PATH:/usr/lib/llvm-19/bin"
status=0
.venv/bin/lit -sv test || status=1
.venv/bin/python -m pytest -q -p no:cacheprovider test/python "$@" || status=1
exit $status
