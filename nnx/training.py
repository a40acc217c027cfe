"""The training loop of nnx-train (docs/training.md, "Training with nnx-train").

A training step built by `graph-autodiff{optimizer=sgd|momentum|adam}` is one
function: its arguments are the model's data inputs, `labels` and the optimizer
state; its results `loss`, `new_<name>` per parameter (the parameter itself is the
`graph.constant` named `<name>`), then `new_<state>` per state argument `<state>`.
`training_signature` reads that contract off the function; `train` runs the step
again and again on the reference interpreter, feeding each step's `new_<name>`
into the parameter constants and each `new_<state>` into the state arguments of
the next step (zeros at the start; Adam's `adam_step` starts at 1).

Data is one array per data input with a leading sample axis (`load_data` reads and
checks an .npz file). Each step takes the next `batch` samples of a sequence of
permutations of the samples, one permutation per epoch drawn from a generator
seeded with `seed` (so the batches wrap around the data set and differ per epoch).
The held-out loss is the step's loss averaged over the consecutive full batches of
the held-out data, with the parameters of the end of training, never updated.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation

from nnx.ir_io import UserError


class TrainingError(UserError):
    """A step that is not a graph-autodiff training step with an optimizer, or
    training data that does not fit it (one line, exit 1)."""


@dataclass(frozen=True)
class Signature:
    """What `train` reads off a training step: the data arguments (name, per-batch
    shape, dtype), the optimizer-state arguments with the result that updates each,
    the parameter constants with the result that updates each, and the loss result."""

    data: list[tuple[str, tuple[int, ...], np.dtype]]
    state: list[tuple[int, int]]
    """(argument index, result index) per optimizer-state argument."""
    params: list[tuple[Operation, str, int]]
    """(graph.constant, name, result index) per parameter."""
    loss: int
    batch: int


def training_signature(func: FuncOp) -> Signature:
    """The data inputs, optimizer state and parameters of a graph-autodiff step (the
    module docstring); TrainingError when `func` is not one."""
    from nnx.autodiff.differentiate import constant_name
    from nnx.dialects.graph import ConstantOp
    from nnx.interp.interpreter import input_specs, output_names

    specs = input_specs(func)
    outs = output_names(func)
    where = f"@{func.sym_name.data}"
    if "loss" not in outs:
        raise TrainingError(f"{where} has no result named 'loss': not a graph-autodiff training step")
    arg_index = {name: i for i, (name, _, _) in enumerate(specs)}
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    consts: dict[str, list[ConstantOp]] = {}
    for op in func.body.block.ops:
        if isinstance(op, ConstantOp):
            consts.setdefault(constant_name(op) or "", []).append(op)
    state: list[tuple[int, int]] = []
    params: list[tuple[Operation, str, int]] = []
    for j, name in enumerate(outs):
        if not name.startswith("new_"):
            continue
        base = name.removeprefix("new_")
        if base in arg_index:
            state.append((arg_index[base], j))
            continue
        const = _parameter_constant(ret.operands[j], consts.get(base, []))
        if const is None:
            raise TrainingError(f"{where}: result '{name}' updates no graph.constant named '{base}'")
        params.append((const, base, j))
    if not params:
        raise TrainingError(f"{where} updates no parameters: build the step with "
                            "graph-autodiff{optimizer=sgd|momentum|adam}")
    stateful = {i for i, _ in state}
    data = [(n, tuple(s), np.dtype(dt)) for i, (n, s, dt) in enumerate(specs)
            if i not in stateful and dt is not None]
    if not data or any(len(s) == 0 for _, s, _ in data):
        raise TrainingError(f"{where}: every data input needs a leading batch axis")
    batches = {s[0] for _, s, _ in data}
    if len(batches) != 1:
        raise TrainingError(f"{where}: the data inputs have different batch sizes {sorted(batches)}")
    return Signature(data, state, params, outs.index("loss"), batches.pop())


def _parameter_constant(update, named: list) -> Operation | None:
    """The constant a `new_<name>` result updates: the one named `<name>` (the
    importer's initializer name), else the first operand of the update's final
    subtraction (graph-autodiff's `p - ...`, nnx/autodiff/optimizers.py)."""
    from nnx.dialects.graph import ConstantOp

    if len(named) == 1:
        return named[0]
    owner = update.owner
    if isinstance(owner, Operation) and owner.operands and isinstance(owner.operands[0].owner, ConstantOp):
        return owner.operands[0].owner
    return None


def load_data(path: str, sig: Signature) -> dict[str, np.ndarray]:
    """The arrays of the .npz file `path`, one per data input of the step, checked:
    present, same element type, same shape after the leading sample axis, the same
    number of samples, at least one batch of them. TrainingError (one line) else."""
    import zipfile

    try:
        z = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, EOFError):
        raise TrainingError(f"{path}: not an .npz archive (one array per data input)") from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise TrainingError(f"{path}: a single array, not an .npz archive (one array per data input)")
    try:
        with z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, ValueError, EOFError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TrainingError(f"{path}: an unreadable array in the .npz archive ({first})") from None
    return check_data(arrays, sig, path)


def check_data(arrays: Mapping[str, np.ndarray], sig: Signature, where: str = "data") -> dict[str, np.ndarray]:
    """`arrays` restricted to the step's data inputs, checked as `load_data` says."""
    out: dict[str, np.ndarray] = {}
    counts = set()
    for name, shape, dt in sig.data:
        if name not in arrays:
            have = ", ".join(sorted(arrays)) or "none"
            raise TrainingError(f"{where}: no array '{name}' (the step's data inputs: "
                                f"{', '.join(n for n, _, _ in sig.data)}; the file has: {have})")
        a = np.asarray(arrays[name])
        if a.dtype != dt:
            raise TrainingError(f"{where}: array '{name}' has element type {a.dtype}, the step takes {dt}")
        if a.ndim != len(shape) or tuple(a.shape[1:]) != tuple(shape[1:]):
            raise TrainingError(f"{where}: array '{name}' has shape {list(a.shape)}, the step takes "
                                f"[samples, {', '.join(str(d) for d in shape[1:])}]")
        counts.add(a.shape[0])
        out[name] = a
    if len(counts) != 1:
        raise TrainingError(f"{where}: the arrays have different sample counts {sorted(counts)}")
    n = counts.pop()
    if n < sig.batch:
        raise TrainingError(f"{where}: {n} samples, fewer than one batch of {sig.batch}")
    return out


def batch_indices(samples: int, batch: int, seed: int) -> Iterator[np.ndarray]:
    """Sample indices of each step: consecutive `batch`-sized runs of a stream of
    permutations of range(samples), a new permutation per epoch (seeded)."""
    rng = np.random.default_rng(seed)
    pending = np.empty(0, dtype=np.int64)
    while True:
        while len(pending) < batch:
            pending = np.concatenate([pending, rng.permutation(samples)])
        yield pending[:batch]
        pending = pending[batch:]


@dataclass
class TrainResult:
    """`losses` (one per step), `eval_loss` (None without held-out data), the
    parameters and optimizer state at the end, and the seconds taken."""

    losses: list[float]
    eval_loss: float | None
    params: dict[str, np.ndarray]
    state: dict[str, np.ndarray]
    seconds: float
    eval_batches: int = 0
    batch: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def train(func: FuncOp, data: Mapping[str, np.ndarray], steps: int,
          eval_data: Mapping[str, np.ndarray] | None = None, seed: int = 0) -> TrainResult:
    """Run the training step `func` `steps` times (the module docstring)."""
    from nnx.interp.interpreter import input_specs, output_names, run_function

    if steps < 1:
        raise TrainingError(f"the number of steps must be at least 1, got {steps}")
    sig = training_signature(func)
    data = check_data(data, sig)
    held = check_data(eval_data, sig, "held-out data") if eval_data is not None else None
    specs = input_specs(func)
    names = [n for n, _, _ in specs]
    outs = output_names(func)
    args: dict[str, np.ndarray] = {}
    for i, _ in sig.state:
        name, shape, dt = specs[i]
        args[name] = (np.ones if name == "adam_step" else np.zeros)(shape, dt)
    constants: dict[Operation, np.ndarray] = {op: op.numpy_value() for op, _, _ in sig.params}  # type: ignore[attr-defined]
    n = next(iter(data.values())).shape[0]
    order = batch_indices(n, sig.batch, seed)
    losses: list[float] = []
    t0 = time.perf_counter()
    for _ in range(steps):
        idx = next(order)
        feeds = dict(args)
        feeds.update({k: v[idx] for k, v in data.items()})
        res = run_function(func, feeds, constants)
        losses.append(float(res[outs[sig.loss]]))
        for op, name, j in sig.params:
            constants[op] = res[outs[j]]
        for i, j in sig.state:
            args[names[i]] = res[outs[j]]
    seconds = time.perf_counter() - t0
    eval_loss, nb = None, 0
    if held is not None:
        m = next(iter(held.values())).shape[0]
        vals = []
        for s in range(0, m - sig.batch + 1, sig.batch):
            feeds = dict(args)
            feeds.update({k: v[s:s + sig.batch] for k, v in held.items()})
            vals.append(float(run_function(func, feeds, constants)[outs[sig.loss]]))
        eval_loss, nb = float(np.mean(vals)), len(vals)
    return TrainResult(losses, eval_loss, {name: constants[op] for op, name, _ in sig.params},
                       {names[i]: args[names[i]] for i, _ in sig.state}, seconds, nb, sig.batch,
                       {"train_seconds": seconds, "total_seconds": time.perf_counter() - t0})


def report(result: TrainResult, steps: int, seed: int) -> dict:
    """The JSON report of nnx-train."""
    return {
        "steps": steps,
        "batch": result.batch,
        "seed": seed,
        "losses": result.losses,
        "first_loss": result.losses[0],
        "final_loss": float(np.mean(result.losses[-min(30, len(result.losses)):])),
        "eval_loss": result.eval_loss,
        "eval_batches": result.eval_batches,
        "seconds": result.timings.get("total_seconds", result.seconds),
        "train_seconds": result.seconds,
        "seconds_per_step": result.seconds / max(1, len(result.losses)),
    }


PLOT_FORMATS = ("png", "svg", "pdf")


def plot_losses(result: TrainResult, fmt: str = "png", title: str = "nnx-train: loss per step") -> bytes:
    """The loss curve drawn with matplotlib, as `fmt` (png, svg or pdf) bytes:
    the training loss per step and, when measured, the held-out loss as a dashed
    line; title, labelled axes and a legend."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    steps = np.arange(1, len(result.losses) + 1)
    ax.plot(steps, result.losses, label="training loss (per step)", color="tab:blue", linewidth=1)
    if result.eval_loss is not None:
        ax.axhline(result.eval_loss, color="tab:orange", linestyle="--",
                   label=f"held-out loss after training ({result.eval_loss:.4g})")
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    plt.close(fig)
    return buf.getvalue()


def npy_bytes(a: np.ndarray) -> bytes:
    """`a` as the bytes of an .npy file."""
    import io

    buf = io.BytesIO()
    np.save(buf, np.asarray(a, order="C"), allow_pickle=False)
    return buf.getvalue()
