"""Stream an imported module as IR text chunks (no 200 MB string for ResNet-50).

`nnx.ir_io.module_to_text` joins the op text and the whole resource section into
one string; for a large model that doubles peak memory and costs a copy. Here the
op text and each blob are separate chunks for `write_text_atomically`, in the same
format (`{-# dialect_resources: { builtin: { handle: "0x<align><hex>" } } #-}`).
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from xdsl.ir import Operation
from xdsl.printer import Printer

from nnx import resources


def module_chunks(
    module: Operation, generic: bool = False, debuginfo: bool = True
) -> Iterator[str]:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic, print_debuginfo=debuginfo).print_op(
        module
    )
    out.write("\n")
    text = out.getvalue()
    yield text
    handles = [h for h in resources.used_handles(text) if resources.has_blob(h)]
    if not handles:
        return
    yield "\n{-#\n  dialect_resources: {\n    builtin: {\n"
    for i, h in enumerate(handles):
        sep = "," if i + 1 < len(handles) else ""
        yield f'      {h}: "'
        yield resources.blob_hex(h)
        yield f'"{sep}\n'
    yield "    }\n  }\n#-}\n"
