"""nnx-train (tools/nnx_train.py, nnx/training.py): a small BatchNorm CNN on sklearn's
digits trains (its loss falls), the loop feeds each step's parameters into the next
(checked against torch.optim.SGD on the same batches), bad data files are one line
and exit status 1, and the outputs are written whole."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cnn_steps import bn_cnn_step

BATCH = 16


def _cnn_step(tmp_path, optimizer="sgd", lr=0.1):
    """(torch model, training step module): conv-BN-ReLU x2, global pool, linear on
    8x8 digits, exported in training mode, through graph-autodiff."""
    return bn_cnn_step(tmp_path, [(8, 1), (8, 2)], BATCH, optimizer=optimizer, lr=lr)


def _digits(n=400):
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    x = d.images.astype(np.float32)[:, None] / 16.0
    y = d.target.astype(np.int64)
    return {"input": x[:n], "labels": y[:n]}, {"input": x[n:n + 4 * BATCH], "labels": y[n:n + 4 * BATCH]}


def _write(tmp_path, name, module):
    from nnx.ir_io import module_to_text

    p = tmp_path / name
    p.write_text("".join(module_to_text(module)))
    return str(p)


def test_loss_falls_and_outputs_are_written(tmp_path):
    from nnx.tools.nnx_train import main

    _, step = _cnn_step(tmp_path, "momentum", 0.1)
    train, test = _digits()
    np.savez(tmp_path / "train.npz", **train)
    np.savez(tmp_path / "test.npz", **test)
    rc = main([_write(tmp_path, "step.mlir", step), "--data", str(tmp_path / "train.npz"), "--steps", "150",
               "--eval-data", str(tmp_path / "test.npz"), "--report", str(tmp_path / "r.json"),
               "--plot", str(tmp_path / "loss.png"), "--save-params", str(tmp_path / "params")])
    assert rc == 0
    r = json.loads((tmp_path / "r.json").read_text())
    losses = r["losses"]
    assert len(losses) == 150 and r["steps"] == 150 and r["batch"] == BATCH
    # it trains: the loss of the last 10 steps is well below the first steps' (ln 10 = 2.3)
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:5]), losses
    assert 0 < r["eval_loss"] < np.mean(losses[:5]) and r["eval_batches"] == 4
    assert r["seconds"] > 0
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = {p.stem for p in (tmp_path / "params").iterdir()}
    assert {"0.weight", "1.weight", "1.bias", "8.weight", "8.bias"} <= saved


def test_parameters_flow_into_the_next_step_like_torch_sgd(tmp_path):
    # three SGD steps on the batches nnx-train takes (batch_indices, seed 3): the
    # parameters equal torch.optim.SGD's on the same batches within float32 rounding
    torch = pytest.importorskip("torch")
    from nnx.interp.interpreter import find_function
    from nnx.training import batch_indices, train

    model, step = _cnn_step(tmp_path, "sgd", 0.1)
    data, _ = _digits(96)
    res = train(find_function(step), data, 3, seed=3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    order = batch_indices(96, BATCH, 3)
    want = []
    for _ in range(3):
        idx = next(order)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(data["input"][idx])),
                                                 torch.from_numpy(data["labels"][idx]))
        want.append(float(loss))
        loss.backward()
        opt.step()
    np.testing.assert_allclose(res.losses, want, rtol=1e-4)
    for name, p in model.named_parameters():
        got = res.params[name]
        assert np.max(np.abs(got - p.detach().numpy())) <= 1e-4 * max(1.0, float(np.max(np.abs(got)))), name


def test_batches_are_seeded_permutations_that_wrap():
    from nnx.training import batch_indices

    it = batch_indices(10, 4, seed=1)
    first = np.concatenate([next(it) for _ in range(5)])  # 20 indices: two epochs
    assert sorted(first[:10]) == list(range(10)) and sorted(first[10:]) == list(range(10))
    again = batch_indices(10, 4, seed=1)
    assert np.array_equal(np.concatenate([next(again) for _ in range(5)]), first)
    other = batch_indices(10, 4, seed=2)
    assert not np.array_equal(np.concatenate([next(other) for _ in range(5)]), first)


@pytest.mark.parametrize("arrays,msg", [
    (lambda d: {"input": d["input"]}, "no array 'labels'"),
    (lambda d: {"input": d["input"][:, :, :4], "labels": d["labels"]}, "array 'input' has shape [400, 1, 4, 8]"),
    (lambda d: {"input": d["input"].astype(np.float64), "labels": d["labels"]}, "array 'input' has element type float64"),
    (lambda d: {"input": d["input"][:8], "labels": d["labels"][:8]}, "8 samples, fewer than one batch of 16"),
    (lambda d: {"input": d["input"], "labels": d["labels"][:100]}, "different sample counts [100, 400]"),
])
def test_bad_data_is_one_line_and_exit_1(tmp_path, capsys, arrays, msg):
    from nnx.tools.nnx_train import main

    _, step = _cnn_step(tmp_path)
    data, _ = _digits()
    np.savez(tmp_path / "bad.npz", **arrays(data))
    rc = main([_write(tmp_path, "step.mlir", step), "--data", str(tmp_path / "bad.npz"), "--steps", "2",
               "--report", str(tmp_path / "r.json")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1, err
    assert err.startswith("nnx-train: error: ") and msg in err, err
    assert not (tmp_path / "r.json").exists()


def test_a_step_without_an_optimizer_is_one_line(tmp_path, capsys):
    from nnx.tools.nnx_train import main

    _, step = _cnn_step(tmp_path, "none")
    data, _ = _digits()
    np.savez(tmp_path / "d.npz", **data)
    rc = main([_write(tmp_path, "step.mlir", step), "--data", str(tmp_path / "d.npz"), "--steps", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "updates no parameters" in err and len(err.splitlines()) == 1


def test_api_train_matches_the_tool(tmp_path):
    from nnx import api
    from nnx.tools.nnx_train import main

    _, step = _cnn_step(tmp_path)
    data, _ = _digits(64)
    np.savez(tmp_path / "d.npz", **data)
    res = api.train(step, tmp_path / "d.npz", 4, seed=5)
    assert main([_write(tmp_path, "step.mlir", step), "--data", str(tmp_path / "d.npz"), "--steps", "4",
                 "--seed", "5", "--report", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["losses"] == res.losses


def test_forward_masks_keep_the_values_and_no_longer_lower_the_peak(tmp_path):
    # graph-autodiff{forward-masks=true}: the Relu masks move right after their
    # forward producers; every result is bit-identical
    from cnn_steps import bn_cnn_step
    from nnx.graph_costs import block_timeline
    from nnx.interp.interpreter import find_function, run_function
    from nnx.memory_timeline import simulate
    from nnx.target import load_target

    layers = [(16, 1)] * 4
    _, plain = bn_cnn_step(tmp_path, layers, 32, optimizer="none")
    _, hoisted = bn_cnn_step(tmp_path, layers, 32, optimizer="none", forward_masks=True)
    ops = [o for o in find_function(hoisted).body.block.ops]
    greater = [i for i, o in enumerate(ops) if o.name == "graph.greater"]
    assert len(greater) == 4
    for i in greater:  # right after the forward op whose result it reads
        assert ops[i].operands[0].owner is ops[i - 1]
    data, _ = _digits(32)
    feeds = {"input": data["input"], "labels": data["labels"]}
    a, b = run_function(find_function(plain), feeds), run_function(find_function(hoisted), feeds)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)

    def peak(m):
        bt = block_timeline(find_function(m).body.block, load_target())
        return simulate(bt.ops, bt.values, bt.units).peak_bytes

    # Relu's mask reads the Relu's output (docs/training.md, "Masks in the forward
    # pass"): the pre-activation is not kept by the default step either, so moving
    # the masks forward only makes them live longer
    assert peak(plain) <= peak(hoisted)


@pytest.mark.parametrize("make,msg", [
    (lambda p: np.save(p.open("wb"), np.zeros(3)), "a single array, not an .npz archive"),
    (lambda p: p.write_text("not numpy"), "not an .npz archive"),
    (lambda p: None, "No such file or directory"),
])
def test_a_data_file_that_is_not_an_npz_is_one_line(tmp_path, capsys, make, msg):
    from nnx.tools.nnx_train import main

    _, step = _cnn_step(tmp_path)
    path = tmp_path / "data.npz"
    make(path)
    rc = main([_write(tmp_path, "step.mlir", step), "--data", str(path), "--steps", "2"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and len(err.splitlines()) == 1 and msg in err, err
