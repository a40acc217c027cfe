"""Parameter updates of graph-autodiff's `optimizer` option (PyTorch's formulas, no
weight decay; docs/training.md, "Optimizers").

* `sgd`:      p' = p - lr g
* `momentum`: v' = momentum v + g;  p' = p - lr v'          (state v: `velocity_<name>`)
* `adam`:     m' = b1 m + (1 - b1) g;  v' = b2 v + (1 - b2) g^2;
              p' = p - lr (m' / (1 - b1^t)) / (sqrt(v' / (1 - b2^t)) + eps)
              (state m, v: `adam_m_<name>`, `adam_v_<name>`; t: `adam_step`, the 1-based
              number of this step, an f32 scalar shared by every parameter)

`STATE[optimizer]` lists the per-parameter state names; each is a function argument
and its update a result `new_<state>_<name>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import SSAValue

from nnx.autodiff.emitter import Emitter, dtype_of

OPTIMIZERS = ("none", "sgd", "momentum", "adam")
STATE: dict[str, tuple[str, ...]] = {
    "none": (), "sgd": (), "momentum": ("velocity",), "adam": ("adam_m", "adam_v"),
}


@dataclass(frozen=True)
class Hyper:
    """Optimizer hyper-parameters."""

    lr: float
    momentum: float = 0.9
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8


def update(
    em: Emitter, optimizer: str, p: SSAValue, g: SSAValue, state: list[SSAValue],
    hyper: Hyper, step: SSAValue | None,
) -> tuple[SSAValue, list[SSAValue]]:
    """(new parameter, new state values in STATE[optimizer] order)."""
    dt = dtype_of(p)
    if optimizer == "sgd":
        return em.sub(p, em.scale(g, hyper.lr)), []
    if optimizer == "momentum":
        v = em.add(em.scale(state[0], hyper.momentum), g)
        return em.sub(p, em.scale(v, hyper.lr)), [v]
    assert optimizer == "adam" and step is not None
    b1, b2 = hyper.beta1, hyper.beta2
    m = em.add(em.scale(state[0], b1), em.scale(g, 1.0 - b1))
    v = em.add(em.scale(state[1], b2), em.scale(em.mul(g, g), 1.0 - b2))
    one = em.const(1.0, dt)
    c1 = em.sub(one, em.emit("Pow", [em.const(b1, dt), step]))
    c2 = em.sub(one, em.emit("Pow", [em.const(b2, dt), step]))
    denom = em.add(em.emit("Sqrt", [em.div(v, c2)]), em.const(hyper.eps, dt))
    new_p = em.sub(p, em.scale(em.div(em.div(m, c1), denom), hyper.lr))
    return new_p, [m, v]
