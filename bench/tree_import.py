"""Import nnx from a given source tree, whatever nnx the venv has installed.

The package maps `nnx` -> nnx/, `nnx.dialects` -> dialects/, `nnx.passes` -> passes/,
`nnx.tools` -> tools/ (pyproject.toml). `use_tree(root)` registers those four packages
from `root` before anything imports nnx, so a benchmark can run the current tree or an
older revision checked out in a `git worktree` with the same venv.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGE_DIRS = {"nnx": "nnx", "nnx.dialects": "dialects", "nnx.passes": "passes", "nnx.tools": "tools"}


def use_tree(root: Path) -> None:
    """Make `import nnx...` load from the source tree `root`."""
    if "nnx" in sys.modules:
        loaded = Path(sys.modules["nnx"].__path__[0]).resolve()
        if loaded != (Path(root) / "nnx").resolve():
            raise RuntimeError(f"nnx is already imported from {loaded}")
        return
    for name, sub in PACKAGE_DIRS.items():
        d = Path(root) / sub
        spec = importlib.util.spec_from_file_location(name, d / "__init__.py", submodule_search_locations=[str(d)])
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        if "." in name:
            parent, _, leaf = name.rpartition(".")
            setattr(sys.modules[parent], leaf, mod)
