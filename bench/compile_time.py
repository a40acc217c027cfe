"""nnx-compile wall time of the current tree against a git revision, in one run.

    .venv/bin/python bench/compile_time.py --rev REV [--models resnet50,bert-base] [--repeat 1]
                                           [--target FILE]

REV (a commit, branch or tag) is checked out in a temporary `git worktree`; both trees
are run with this venv's Python, each in a fresh subprocess that imports nnx from its
tree (bench/tree_import.py), alternately, `--repeat` times; the best wall time of
each is kept. The time is nnx-compile's whole `main` (import, pipeline, lower-to-chip,
assembly and data file), the interpreter start-up excluded. Models: bench/models.py's
full-size ResNet-50 (1x3x224x224) and BERT-base (sequence 128), generated into
cache/bench-models/ on first use, and the onnx wheel's light CNNs by name
(`inception_v2`, `densenet121`, ...: test/python/model_zoo.py `LIGHT_MODELS`). `--target FILE`
compiles for that target (e.g. targets/mesh.toml: each tree's default mesh schedule).
Printed per model: the revision's and this tree's seconds and their ratio (this tree /
revision; the architecture issue asks for <= 1.3, the mesh schedules issue for <= 2).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import sys, time
sys.path.insert(0, {bench!r})
from tree_import import use_tree
use_tree({tree!r})
from nnx.tools.nnx_compile import main
t = time.perf_counter()
rc = main([{model!r}, "-o", {out!r}] + {extra!r})
print("SECONDS", time.perf_counter() - t, rc)
"""


def compile_seconds(tree: Path, model: Path, work: Path, target: str | None = None) -> float:
    """Wall seconds of nnx-compile of `model` (for `target`, a TOML path) with nnx
    imported from `tree`."""
    extra = ["--target", str(Path(target).resolve())] if target else []
    code = _CHILD.format(bench=str(ROOT / "bench"), tree=str(tree), model=str(model), out=str(work / "prog.s"),
                         extra=extra)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("SECONDS"):
            _, secs, rc = line.split()
            if rc != "0":
                break
            return float(secs)
    raise SystemExit(f"compile_time: nnx-compile of {model.name} failed in {tree}:\n{r.stderr[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="git revision to compare with (e.g. main)")
    ap.add_argument("--models", default="resnet50,bert-base")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", metavar="FILE", help="also write the numbers as JSON")
    ap.add_argument("--target", metavar="FILE", help="compile for this target TOML (default: the default target)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT / "bench"))
    sys.path.insert(0, str(ROOT / "test" / "python"))
    import model_zoo  # test/python/model_zoo.py
    from models import get  # bench/models.py

    paths = {m: model_zoo.light_model_path(m) if m in model_zoo.LIGHT_MODELS else get(m)
             for m in args.models.split(",") if m}
    rows = []
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        base = td / "rev"
        r = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.rev],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"compile_time: cannot check out '{args.rev}': {r.stderr.strip()}", file=sys.stderr)
            return 1
        try:
            for name, model in paths.items():
                best = {"rev": float("inf"), "tree": float("inf")}
                for _ in range(max(args.repeat, 1)):
                    for which, tree in (("rev", base), ("tree", ROOT)):
                        w = td / f"{name}-{which}"
                        w.mkdir(exist_ok=True)
                        best[which] = min(best[which], compile_seconds(tree, model, w, args.target))
                ratio = best["tree"] / best["rev"]
                rows.append({"model": name, "rev": args.rev, "rev_seconds": round(best["rev"], 2),
                             "tree_seconds": round(best["tree"], 2), "ratio": round(ratio, 3)})
                print(f"{name:<12} {args.rev}: {best['rev']:.1f}s  this tree: {best['tree']:.1f}s  ratio {ratio:.3f}",
                      flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], capture_output=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
