"""Matrix products whose every element is computed the same way whatever the other
rows and columns are: the kernels of Conv, Gemm and MatMul (kernels_nn.py) and the
reason `op-split` may cut those ops into slices and stay bit-identical
(docs/topological-order.md, "Operator splitting").

A BLAS picks its code path, and with it the order in which it sums the K products of
an output element, by the shape of the call: OpenBLAS (numpy's BLAS) has
small-matrix kernels, edge-tile kernels, gemv for one row or column, and splits
work between threads by the matrix size. So `(A @ B)[:m]` and `A[:m] @ B` differ in
the last bit for many shapes, and a Conv/Gemm/MatMul sliced by output rows or
columns would not reproduce the whole op.

`blocked_matmul` removes that dependence: it computes C = A @ B with one BLAS call
per block of ROW_BLOCK rows x COL_BLOCK columns of C, the blocks counted from row
and column 0 (the last block of each dimension keeps the remainder). An element's
call therefore has the shape (its block's rows, K) x (K, its block's columns), and
the element sits at the same place in it, whatever slice of A's rows and B's
columns the op was given -- provided the slice starts at a multiple of the block
size and ends at a block boundary or at the end of the whole operand, which is how
op-split cuts (its granules are these block sizes). The argument assumes only that
the BLAS is deterministic for a given call: the arithmetic of element (i, j) depends
on the call's dimensions, transpositions and the position (i, j), not on the other
elements' values nor on addresses. OpenBLAS satisfies this (it packs operands into
its own buffers and partitions threads by dimensions only); MKL does only with its
conditional numerical reproducibility mode.
"""

from __future__ import annotations

import itertools

import numpy as np

ROW_BLOCK = 32
"""Rows of C per BLAS call: Conv output channels, Gemm/MatMul rows. Also op-split's
granule along those axes."""

COL_BLOCK = 128
"""Columns of C per BLAS call (Gemm/MatMul; a Conv's columns are its output
positions, which op-split never cuts, so Conv calls take them all). Also op-split's
granule along Gemm/MatMul columns."""


def blocked_matmul(
    a: np.ndarray,
    b: np.ndarray,
    out: np.ndarray | None = None,
    col_block: int | None = COL_BLOCK,
) -> np.ndarray:
    """C = a @ b for a (M, K), b (K, N), one BLAS call per ROW_BLOCK x `col_block`
    block of C counted from (0, 0) (`col_block=None`: all N columns in every call).
    Element (i, j) is the same for `a[r0:r1]`, `b[:, c0:c1]` whenever r0, c0 are
    multiples of the blocks and r1, c1 block boundaries or M, N (module docstring).
    Writes into `out` (M, N) when given."""
    m, n = a.shape[0], b.shape[1]
    if out is None:
        out = np.empty((m, n), np.result_type(a.dtype, b.dtype))
    cb = n if col_block is None else col_block
    for c0 in range(0, max(n, 1), max(cb, 1)):
        bc = b[:, c0 : c0 + cb]
        for r0 in range(0, m, ROW_BLOCK):
            ar = a[r0 : r0 + ROW_BLOCK]
            if np.may_share_memory(ar, bc):
                # numpy hands A @ A.T of one buffer to syrk, another kernel
                bc = bc.copy()
            np.matmul(ar, bc, out=out[r0 : r0 + ROW_BLOCK, c0 : c0 + cb])
    return out


def batched_blocked_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy.matmul semantics (1-D operands, broadcast leading axes) with every 2-D
    product computed by `blocked_matmul`, one leading index at a time: an element
    depends on its own matrix only, so slicing a leading axis keeps it."""
    va, vb = a.ndim == 1, b.ndim == 1
    a2 = a[None, :] if va else a
    b2 = b[:, None] if vb else b
    lead = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    dt = np.result_type(a.dtype, b.dtype)
    out = np.empty(lead + (a2.shape[-2], b2.shape[-1]), dt)
    aa = np.broadcast_to(a2, lead + a2.shape[-2:])
    bb = np.broadcast_to(b2, lead + b2.shape[-2:])
    for idx in itertools.product(*(range(d) for d in lead)):
        blocked_matmul(aa[idx], bb[idx], out=out[idx])
    if va:
        out = out[..., 0, :]
    if vb:
        out = out[..., 0]
    return out
