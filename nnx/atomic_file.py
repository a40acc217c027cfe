"""Output files that appear whole or not at all, one file or a set of files together.

Every writer of a user-given output path goes through `atomic_outputs`: each file is
written to a temporary file in its target's directory; only when the whole `with`
block succeeds are all of them renamed onto their targets, and otherwise every
temporary file is removed and the targets are left as they were. So a failed run
never leaves a half-written output, nor a new `prog.s` beside a stale `prog.data`.

    with atomic_outputs(["prog.s", "prog.data"]) as (asm_tmp, data_tmp):
        write(asm_tmp); write(data_tmp)

`atomic_path(p)` and `atomic_open(p, mode)` are the one-file forms of the same thing.
The files get the permissions an ordinary `open()` would give (0666 less the umask),
not `mkstemp`'s 0600.

The renames at the end are one `os.replace` per file: each is atomic, the set is
not (a crash between two renames leaves the first new and the second old), but no
reader ever sees a partial file, and an exception before the renames changes nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

PathLike = str | os.PathLike[str]


def _umask_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _remove_quietly(paths: Sequence[str]) -> None:
    for tmp in paths:
        try:
            os.unlink(tmp)
        except OSError:
            pass


@contextmanager
def atomic_outputs(paths: Sequence[PathLike]) -> Iterator[tuple[str, ...]]:
    """Yield one temporary path per target (same order); rename all of them onto
    their targets when the block succeeds, remove all of them when it raises.

    The targets must be distinct. Every temporary file exists (empty) when the block
    starts; one the block removed is an error before anything is renamed.
    """
    targets = [os.fspath(p) for p in paths]
    if len({os.path.abspath(t) for t in targets}) != len(targets):
        raise ValueError(f"atomic_outputs: the same file given twice: {targets}")
    temps: list[str] = []
    try:
        for target in targets:
            directory = os.path.dirname(os.path.abspath(target)) or "."
            try:
                fd, tmp = tempfile.mkstemp(
                    prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory
                )
            except OSError as e:  # name the user's file, not the temporary one
                raise OSError(e.errno, f"cannot write {target}: {e.strerror}") from None
            os.close(fd)
            temps.append(tmp)
        yield tuple(temps)
        mode = _umask_mode()
        for tmp in temps:
            os.chmod(tmp, mode)  # FileNotFoundError before any rename if one is gone
        for tmp, target in zip(temps, targets):
            os.replace(tmp, target)
    except BaseException:
        _remove_quietly(temps)
        raise


@contextmanager
def atomic_path(path: PathLike) -> Iterator[str]:
    """Yield a temporary path beside `path`; rename it onto `path` on success."""
    with atomic_outputs([path]) as (tmp,):
        yield tmp


@contextmanager
def atomic_open(path: PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """`open(path, mode)` that only replaces `path` if the block completes."""
    if "w" not in mode:
        raise ValueError("atomic_open is for writing")
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f


@contextmanager
def files_atomically(contents: dict[PathLike, bytes | str],
                     extra: Sequence[PathLike] = ()) -> Iterator[tuple[str, ...]]:
    """Write every `path: data` (bytes, or str as UTF-8), then yield the temporary
    paths of `extra` (files the block writes itself, e.g. a plot); all of them appear
    together when the block succeeds, none when it raises."""
    paths = list(contents)
    with atomic_outputs(paths + list(extra)) as temps:
        for tmp, path in zip(temps, paths):
            data = contents[path]
            with open(tmp, "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        yield temps[len(paths):]


def write_files_atomically(contents: dict[PathLike, bytes | str]) -> None:
    """Write every `path: data` (bytes, or str as UTF-8) all or nothing."""
    with files_atomically(contents):
        pass
