"""Named .npy inputs and outputs of the run tools (`nnx-run --interpret` and the simulator).

`--input NAME=FILE.npy` values are read with one-line errors; outputs are written as
DIR/NAME.npy, NAME being the output's name with characters outside [A-Za-z0-9_.-]
replaced by `_`, all of them or none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

import numpy as np

from nnx.atomic_file import atomic_outputs


class NamedArrayError(ValueError):
    """A bad --input spec or file, or outputs that cannot be written (one line)."""


def safe_name(name: str) -> str:
    """A file name for an output name: chars outside [A-Za-z0-9_.-] become `_`."""
    s = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    if s in ("", ".", ".."):
        s = s.replace(".", "_") or "_"
    return s


def load_inputs(specs: Sequence[str]) -> dict[str, np.ndarray]:
    """`NAME=FILE.npy` specs -> {NAME: array}."""
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise NamedArrayError(f"--input expects NAME=FILE.npy, got '{spec}'")
        if name in out:
            raise NamedArrayError(f"input '{name}' given twice")
        try:
            arr = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise NamedArrayError(f"{path}: no such file (input '{name}')") from None
        except OSError as e:
            raise NamedArrayError(f"{path}: cannot read: {e.strerror or e}") from None
        except ValueError as e:
            first = str(e).splitlines()[0] if str(e) else "bad header"
            raise NamedArrayError(f"{path}: not a .npy array file ({first})") from None
        if not isinstance(arr, np.ndarray):
            raise NamedArrayError(f"{path}: holds several arrays (.npz); give one .npy per input")
        out[name] = arr
    return out


def write_outputs(directory: str, outputs: Mapping[str, np.ndarray]) -> None:
    """Write DIR/safe_name(NAME).npy for every output: all appear, or none."""
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise NamedArrayError(f"{directory}: cannot create the output directory: {e.strerror}") from None
    names = list(outputs)
    files = [safe_name(n) + ".npy" for n in names]
    seen: dict[str, int] = {}
    for i, f in enumerate(files):
        if f in seen:
            raise NamedArrayError(
                f"outputs '{names[seen[f]]}' and '{names[i]}' map to the same file {f}"
            )
        seen[f] = i
    try:
        with atomic_outputs([os.path.join(directory, f) for f in files]) as temps:
            for tmp, arr in zip(temps, outputs.values()):
                with open(tmp, "wb") as fh:
                    np.save(fh, np.asarray(arr, order="C"), allow_pickle=False)  # 0-d stays 0-d
    except OSError as e:
        raise NamedArrayError(f"{directory}: cannot write outputs: {e.strerror}") from None
