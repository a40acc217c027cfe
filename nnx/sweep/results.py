"""The results file of a sweep (docs/sweeps.md, "The results file"): a CSV with one
row per point, columns `model`, `pipeline`, one per grid key (named by the dotted
key), one per metric, `status`, `seconds` and `key` (the point's content hash,
nnx/sweep/points.py).

Rows are appended as points finish, each with one `write` on a file opened for
appending, so an interrupted sweep keeps every finished row; a partial last line
(a write cut off) is dropped when the file is opened again. A re-run reads the keys
already present and computes only the other points. When every point is in, the
file is rewritten in point order, atomically (nnx/atomic_file.py), so the same sweep
gives the same file however its points were scheduled (up to `seconds`); rows of
points the sweep file no longer has are kept, after the others.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable, Sequence
from typing import Any

from nnx.atomic_file import atomic_open

from .spec import SweepError, SweepSpec

#: the columns after the grid keys and the metrics
TAIL = ("status", "seconds", "key")


def columns(spec: SweepSpec) -> list[str]:
    """The header of the results file of `spec`."""
    return ["model", "pipeline", *spec.grid, *spec.metrics, *TAIL]


def _line(values: Iterable[Any]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(["" if v is None else v for v in values])
    return buf.getvalue()


class ResultsFile:
    """The rows of a results file, read when it exists, appended one by one."""

    def __init__(self, path: str, header: Sequence[str]):
        self.path = path
        self.header = list(header)
        self.rows: dict[str, dict[str, str]] = {}
        if os.path.exists(path):
            self._read()

    def _read(self) -> None:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise SweepError(f"{self.path}: cannot read: {e.strerror}") from None
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):  # a row cut off mid-write: drop it
            with open(self.path, "r+b") as f:
                f.truncate(len(complete))
        lines = list(csv.reader(io.StringIO(complete.decode("utf-8"))))
        if not lines:
            return
        if lines[0] != self.header:
            raise SweepError(f"{self.path}: its columns ({', '.join(lines[0])}) are not the sweep's "
                             f"({', '.join(self.header)}): write to a new file")
        for values in lines[1:]:
            if len(values) == len(self.header):
                row = dict(zip(self.header, values))
                self.rows[row["key"]] = row

    def append(self, row: dict[str, Any]) -> None:
        """Add one row at the end of the file (the header first in a new file)."""
        text = _line(row.get(c, "") for c in self.header)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            if os.fstat(fd).st_size == 0:
                text = _line(self.header) + text
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        self.rows[str(row["key"])] = {c: str(row.get(c, "")) for c in self.header}

    def rewrite(self, order: Sequence[str]) -> None:
        """Rewrite the file atomically with the rows of `order` (keys) in that order,
        then any other rows it holds (points no longer in the sweep) as they were."""
        first = set(order)
        keys = list(order) + [k for k in self.rows if k not in first]
        with atomic_open(self.path, "w", newline="") as f:
            f.write(_line(self.header))
            for k in keys:
                f.write(_line(self.rows[k][c] for c in self.header))
