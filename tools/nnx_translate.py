"""nnx-translate: chip-dialect IR -> the nnx assembly text (and its data file).

    nnx-translate --to-asm IN.mlir -o PROG.s [--target FILE]

IN.mlir holds one `chip.program` (at the top level of the module or anywhere inside
it). PROG.s gets the instructions, one per line; the values of every `chip.const`
go to the raw little-endian storage image PROG.data beside it (`.data` line with its
size and crc32 in the header), never as decimal text. The program is checked against
the target (`--target`, default: the embedded default): addresses within the caches
and storage, units that exist. Errors are one line and exit 1 (nnx/cli.py); PROG.s and
PROG.data are written together or not at all.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np


from nnx.cli import ArgumentParser, run_tool

PROG = "nnx-translate"


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description="Translate chip-dialect IR to nnx assembly.")
    p.add_argument("input", metavar="IN.mlir", help="chip-dialect IR ('-' for stdin)")
    p.add_argument("--to-asm", action="store_true", required=True, help="emit the assembly text")
    p.add_argument("-o", "--output", metavar="PROG.s", default="-", help="output file ('-' = stdout)")
    p.add_argument("--target", metavar="FILE", help="target description checked against (TOML)")
    return p


def data_file_name(asm_path: str) -> str:
    base = os.path.basename(asm_path)
    stem = base[:-2] if base.endswith(".s") else base
    return stem + ".data"


def translate(module, asm_path: str, target):
    """(assembly text, data bytes or None) of the chip.program in `module`."""
    from nnx.sim.asm import format_program

    prog, data = build_program(module, asm_path, target)
    return format_program(prog), data


def build_program(module, asm_path: str, target):
    """(nnx.sim.asm.Program, data bytes or None) of the chip.program in `module`;
    the program's `.data` segment names the data file beside `asm_path`."""
    from nnx.dialects.chip import ConstOp, InputOp, OutputOp, ProgramOp
    from nnx.ir_io import UserError

    programs = [op for op in module.walk() if isinstance(op, ProgramOp)]
    if len(programs) != 1:
        raise UserError(f"expected one chip.program, found {len(programs)}")
    prog_op = programs[0]
    syms: dict[type, list] = {InputOp: [], OutputOp: [], ConstOp: []}
    for op in prog_op.body.block.ops:
        if type(op) in syms:
            syms[type(op)].append((op.sym_name.data, op.tile.tile()) + ((op.array(),) if isinstance(op, ConstOp) else ()))
    return assemble(prog_op.target.data if prog_op.target else target.name, prog_op.storage_bytes.value.data,
                    syms[InputOp], syms[OutputOp], syms[ConstOp], [op.to_instr() for op in prog_op.instructions()],
                    asm_path, target)


def assemble(name: str, storage_bytes: int, inputs: list, outputs: list, consts: list, instrs: list, asm_path: str,
             target):
    """(nnx.sim.asm.Program, data bytes or None) of a program for the target `name`
    from its parts: (symbol, tile) of the inputs and outputs, (symbol, tile, array)
    of the constants, the instructions; checked against `target` (a UserError when
    it does not fit). The `.data` segment names the data file beside `asm_path`."""
    from nnx.dialects.chip import check_instrs
    from nnx.ir_io import UserError
    from nnx.sim.asm import DataSegment, Program, Symbol, crc32_of

    errors = check_instrs(storage_bytes, instrs, target)
    if errors:
        raise UserError(f"does not fit target '{target.name}': {errors[0]}")
    prog = Program(path=asm_path, target=name)
    prog.storage_bytes = storage_bytes
    prog.inputs = [Symbol(n, t) for n, t in inputs]
    prog.outputs = [Symbol(n, t) for n, t in outputs]
    data_parts: list[tuple[int, bytes]] = []
    for n, t, value in consts:
        prog.consts.append(Symbol(n, t))
        arr = np.ascontiguousarray(value, dtype=t.np_dtype)
        data_parts.append((t.offset, arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()))
    prog.instrs = instrs
    data = None
    if data_parts:
        data_parts.sort()
        lo = data_parts[0][0]
        hi = max(a + len(b) for a, b in data_parts)
        image = bytearray(hi - lo)
        for a, b in data_parts:
            image[a - lo : a - lo + len(b)] = b
        data = bytes(image)
        prog.data.append(DataSegment(data_file_name(asm_path), lo, len(data), crc32_of(data)))
    return prog, data


def _main(argv: list[str]) -> int:
    from nnx.api import Program
    from nnx.ir_io import UserError, read_module
    from nnx.pipeline import verify
    from nnx.target import load_target

    args = _parser().parse_args(argv)
    target = load_target(args.target)
    module = read_module(args.input)
    verify(module, args.input)
    try:
        prog, data = build_program(module, args.output, target)
    except UserError as e:
        raise UserError(f"{args.input}: error: {e}") from None
    program = Program(prog, data)
    if args.output == "-":
        if data is not None:
            raise UserError(
                "the program has constants: give -o PROG.s so that PROG.data can be "
                "written beside it"
            )
        sys.stdout.write(program.asm)
        return 0
    program.save(args.output)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_tool(PROG, _main, argv)


if __name__ == "__main__":
    sys.exit(main())
