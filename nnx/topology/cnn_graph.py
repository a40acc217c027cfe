"""Neuron graphs of convolutional / fully connected layers: every output element of
a layer is a neuron, and its receptive field gives its synapses (docs/neuron-mapping.md,
section 3.2, "Neurons").

Used by the benchmarks and meant for the ``neuron-group-map`` pass: the pass
hands per-layer shapes and weights as numpy arrays and gets a synapse list.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Synapses:
    pre: np.ndarray     # int32
    post: np.ndarray    # int32
    weight: np.ndarray  # float32 (absolute values)


def conv_synapses(in_shape, weight, *, stride=(1, 1), pad=(0, 0), dilation=(1, 1), groups=1,
                  in_offset=0, out_offset=0, out_hw=None) -> tuple[Synapses, tuple[int, int, int]]:
    """Synapses of a 2-D convolution (ONNX Conv semantics, NCHW, batch 1).

    ``in_shape`` = (C, H, W) of the input neurons, numbered ``in_offset +
    (c*H + y)*W + x``; ``weight`` = (Cout, C/groups, kh, kw). Output neuron
    (o, oy, ox) is numbered ``out_offset + (o*OH + oy)*OW + ox`` and receives one
    synapse per kernel tap that lands inside the (unpadded) input, weight |w|.
    ``pad`` is the padding at the start of each spatial dim (top, left);
    ``out_hw`` overrides the output size (asymmetric or ``auto_pad`` padding,
    as given by the op's result type). Returns (synapses, output shape).
    """
    c, h, w = (int(v) for v in in_shape)
    weight = np.asarray(weight)
    cout, cpg, kh, kw = weight.shape
    sy, sx = stride
    py, px = pad
    dy, dx = dilation
    if c != cpg * groups or cout % groups:
        raise ValueError(f"conv weight {weight.shape} does not match input channels {c} "
                         f"with groups={groups}")
    oh = (h + 2 * py - dy * (kh - 1) - 1) // sy + 1
    ow = (w + 2 * px - dx * (kw - 1) - 1) // sx + 1
    if out_hw is not None:
        oh, ow = (int(v) for v in out_hw)
    opg = cout // groups
    oy = np.arange(oh)
    ox = np.arange(ow)
    pres, posts, ws = [], [], []
    for g in range(groups):
        outs = np.arange(g * opg, (g + 1) * opg)
        for ci in range(cpg):
            cin = g * cpg + ci
            for ky in range(kh):
                iy = oy * sy - py + ky * dy
                vy = (iy >= 0) & (iy < h)
                for kx in range(kw):
                    ix = ox * sx - px + kx * dx
                    vx = (ix >= 0) & (ix < w)
                    yy, xx = np.nonzero(vy[:, None] & vx[None, :])
                    if yy.size == 0:
                        continue
                    src = in_offset + (cin * h + iy[yy]) * w + ix[xx]
                    dst_sp = yy * ow + xx
                    dst = out_offset + outs[:, None] * (oh * ow) + dst_sp[None, :]
                    pres.append(np.broadcast_to(src, dst.shape).reshape(-1).astype(np.int32))
                    posts.append(dst.reshape(-1).astype(np.int32))
                    ws.append(np.repeat(np.abs(weight[outs, ci, ky, kx]).astype(np.float32),
                                        dst_sp.size))
    if not pres:
        e = np.empty(0, dtype=np.int32)
        return Synapses(e, e, np.empty(0, dtype=np.float32)), (cout, oh, ow)
    return (Synapses(np.concatenate(pres), np.concatenate(posts), np.concatenate(ws)),
            (cout, oh, ow))


def dense_synapses(n_in: int, weight, *, in_offset=0, out_offset=0) -> Synapses:
    """Synapses of a fully connected layer: weight (out, in); zero weights are
    not synapses."""
    weight = np.asarray(weight)
    o, i = np.nonzero(weight)
    if weight.shape[1] != n_in:
        raise ValueError(f"fc weight {weight.shape} does not match {n_in} inputs")
    return Synapses((in_offset + i).astype(np.int32), (out_offset + o).astype(np.int32),
                    np.abs(weight[o, i]).astype(np.float32))


def cnn_graph(input_shape, layers, rng: np.random.Generator | None = None):
    """Chain layers into one neuron graph, input neurons first.

    ``layers``: list of dicts ``{"op": "conv", "weight": array or None,
    "out_channels": C, "kernel": (kh, kw), "stride": ..., "pad": ..., "groups": g}``
    or ``{"op": "fc", "weight": array or None, "out": n}``; a missing weight is
    drawn from ``rng`` (normal, He-scaled). Returns (pre, post, weight, n_neurons,
    list of (layer, first neuron, shape)).
    """
    rng = rng or np.random.default_rng(0)
    shape = tuple(int(v) for v in input_shape)
    offset = int(np.prod(shape))
    spans = [("input", 0, shape)]
    cur = 0
    pres, posts, ws = [], [], []
    for li, L in enumerate(layers):
        if L["op"] == "conv":
            kh, kw = L.get("kernel", (3, 3))
            g = L.get("groups", 1)
            wt = L.get("weight")
            if wt is None:
                cpg = shape[0] // g
                wt = rng.normal(0, np.sqrt(2.0 / (cpg * kh * kw)),
                                size=(L["out_channels"], cpg, kh, kw)).astype(np.float32)
            syn, oshape = conv_synapses(shape, wt, stride=L.get("stride", (1, 1)),
                                        pad=L.get("pad", (0, 0)), groups=g, in_offset=cur,
                                        out_offset=offset)
        elif L["op"] == "fc":
            nin = int(np.prod(shape))
            wt = L.get("weight")
            if wt is None:
                wt = rng.normal(0, np.sqrt(2.0 / nin), size=(L["out"], nin)).astype(np.float32)
            syn = dense_synapses(nin, wt, in_offset=cur, out_offset=offset)
            oshape = (wt.shape[0],)
        else:
            raise ValueError(f"layer {li}: unknown op {L['op']!r}")
        pres.append(syn.pre)
        posts.append(syn.post)
        ws.append(syn.weight)
        spans.append((f"{L['op']}{li}", offset, oshape))
        cur = offset
        shape = tuple(oshape)
        offset += int(np.prod(shape))
    return (np.concatenate(pres), np.concatenate(posts), np.concatenate(ws), offset, spans)
