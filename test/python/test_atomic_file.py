"""nnx/atomic_file.py: a set of output files appears whole, all together, or not at all.

Also the writers built on it: `nnx.api.Program.save` (prog.s + prog.data) and
nnx-compile leave neither file when the second one fails, and never touch the files
that were there before.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from nnx.atomic_file import atomic_open, atomic_outputs, atomic_path

ROOT = Path(__file__).resolve().parents[2]


def test_all_files_appear_on_success(tmp_path: Path) -> None:
    a, b = tmp_path / "prog.s", tmp_path / "prog.data"
    with atomic_outputs([a, b]) as (ta, tb):
        Path(ta).write_text("asm")
        Path(tb).write_bytes(b"\x01\x02")
        assert not a.exists() and not b.exists()  # nothing visible before the end
    assert a.read_text() == "asm" and b.read_bytes() == b"\x01\x02"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.data", "prog.s"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(a.stat().st_mode) == 0o666 & ~umask


def test_failure_in_the_middle_leaves_neither_file(tmp_path: Path) -> None:
    a, b = tmp_path / "prog.s", tmp_path / "prog.data"
    with pytest.raises(RuntimeError):
        with atomic_outputs([a, b]) as (ta, tb):
            Path(ta).write_text("asm")
            raise RuntimeError("failed before prog.data was written")
    assert list(tmp_path.iterdir()) == []


def test_failure_leaves_existing_files_untouched(tmp_path: Path) -> None:
    a, b = tmp_path / "prog.s", tmp_path / "prog.data"
    a.write_text("old asm")
    b.write_bytes(b"old data")
    with pytest.raises(KeyboardInterrupt):
        with atomic_outputs([a, b]) as (ta, tb):
            Path(ta).write_text("new asm")
            Path(tb).write_bytes(b"new data")
            raise KeyboardInterrupt  # even a BaseException
    assert a.read_text() == "old asm" and b.read_bytes() == b"old data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.data", "prog.s"]


def test_a_removed_temporary_is_an_error_before_any_rename(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("old")
    with pytest.raises(FileNotFoundError):
        with atomic_outputs([a, b]) as (ta, tb):
            Path(ta).write_text("new")
            os.unlink(tb)
    assert a.read_text() == "old" and not b.exists()


def test_same_file_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        with atomic_outputs([tmp_path / "a", str(tmp_path / "a")]):
            pass


def test_one_file_forms(tmp_path: Path) -> None:
    p = tmp_path / "x.txt"
    with atomic_open(p, "w") as f:
        f.write("hi")
    assert p.read_text() == "hi"
    with pytest.raises(OSError):
        with atomic_path(p) as tmp:
            Path(tmp).write_text("half")
            raise OSError("disk full")
    assert p.read_text() == "hi" and len(list(tmp_path.iterdir())) == 1


def test_program_save_is_all_or_nothing(tmp_path: Path, monkeypatch) -> None:
    """prog.s and prog.data: a failure while writing the data leaves neither, and an
    older pair stays as it was."""
    from nnx import api

    prog = api.compile(ROOT / "examples" / "tiny_cnn.onnx", batch=1)
    assert prog.data  # the model has weights: two files
    out = tmp_path / "prog.s"
    prog.save(out)
    old_s, old_data = out.read_text(), (tmp_path / "prog.data").read_bytes()
    assert ".data prog.data" in old_s and len(old_data) == len(prog.data)

    real_open = open

    def failing_open(file, mode="r", *a, **k):
        f = real_open(file, mode, *a, **k)
        if "b" in mode and "w" in mode:
            f.close()
            raise OSError(28, "No space left on device")
        return f

    import builtins

    monkeypatch.setattr(builtins, "open", failing_open)
    renamed = tmp_path / "other.s"
    with pytest.raises(OSError):
        prog.save(renamed)
    with pytest.raises(OSError):
        prog.save(out)
    monkeypatch.undo()
    assert not renamed.exists() and not (tmp_path / "other.data").exists()
    assert out.read_text() == old_s and (tmp_path / "prog.data").read_bytes() == old_data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.data", "prog.s"]
