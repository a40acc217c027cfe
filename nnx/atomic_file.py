"""Output files that appear whole or not at all.

Every tool writes through here: the data goes to a temporary file in the target's
directory, which is renamed onto the target only when writing succeeded, and removed
otherwise, so a failed run never leaves a half-written output behind. The file gets
the permissions an ordinary `open()` would give (0666 less the umask), not
`mkstemp`'s 0600.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


def _umask_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yield a temporary path beside `path`; rename it onto `path` on success."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target)) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """`open(path, mode)` that only replaces `path` if the block completes."""
    if "w" not in mode:
        raise ValueError("atomic_open is for writing")
    with atomic_path(path) as tmp:
        with open(tmp, mode, **kwargs) as f:
            yield f
