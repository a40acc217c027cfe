# lit configuration for the nnx test suites (test/<area>/*.mlir), laid out like xDSL's.
#
#   lit -v test/            (from the repository root, with the venv's lit)
#
# Tools resolve from the directory of the Python that runs lit (the venv's bin/), so
# `nnx-opt`, `nnx-import`, ... are the ones installed from this checkout.
import os
import shutil
import sys

import lit.formats

config.name = "nnx"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["python", "Inputs", "lit.cfg.py"]

bin_dir = os.path.dirname(sys.executable)  # not realpath: keep the venv's bin/
path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
config.environment["PATH"] = path
for var in ("HOME", "TMPDIR", "NNX_CACHE_DIR", "HF_HUB_OFFLINE", "LANG", "LC_ALL"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

config.substitutions.append(("%python", sys.executable))

filecheck = shutil.which("filecheck", path=path)
if filecheck is None:
    lit_config.fatal("the 'filecheck' command (PyPI package filecheck) is not installed")
# `FileCheck` in RUN lines is the PyPI port; a word-boundary pattern so that e.g.
# `--check-prefix` is not touched.
config.substitutions.append((r"\bFileCheck\b", filecheck))

if shutil.which("mlir-opt-19", path=path):
    config.available_features.add("mlir-opt")
