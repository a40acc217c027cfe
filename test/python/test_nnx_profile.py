"""nnx-profile: report fields, plot and trace files, one-line errors with exit codes,
and no output left behind by a failed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from nnx.tools.nnx_profile import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V100 = os.path.join(ROOT, "targets", "v100.toml")

GRAPH = """func.func @main(%x: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %a = graph.relu(%x) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %b = graph.sigmoid(%a) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %c1 = graph.tanh(%b) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %c2 = graph.sigmoid(%b) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %d = graph.add(%c1, %c2) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  %e = graph.tanh(%d) : (tensor<256x256xf32>) -> tensor<256x256xf32>
  %y = graph.add(%e, %a) : (tensor<256x256xf32>, tensor<256x256xf32>) -> tensor<256x256xf32>
  func.return %y : tensor<256x256xf32>
}
"""


@pytest.fixture
def graphs(tmp_path):
    before = tmp_path / "before.mlir"
    before.write_text(GRAPH)
    after = tmp_path / "after.mlir"
    r = subprocess.run([sys.executable, "-m", "nnx.tools.nnx_opt", str(before), "-p", "swap-insert{th-tts=100}",
                        "-o", str(after)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return before, after


def test_report_fields(graphs, tmp_path, capsys):
    before, after = graphs
    rep = tmp_path / "r.json"
    assert main([str(before), "--report", str(rep), "--target", V100]) == 0
    r = json.loads(rep.read_text())
    one = 256 * 256 * 4
    # x resident; a, b, c1 live when c2 is allocated: peak 5 tensors, at c2
    assert r["peak_device_bytes"] == 5 * one
    assert r["fits"] is True and r["device_memory_bytes"] == 16 * 2**30
    assert r["cycles"] > 0 and r["link_busy_cycles"] == 0
    assert r["peak_op"]["name"] == "graph.sigmoid" and r["peak_op"]["location"].endswith("before.mlir:5:3")


def test_memory_rules_option(graphs, tmp_path):
    """--memory-rules reuse lets each elementwise op reuse its dead operand's buffer:
    one tensor fewer at the peak than the default (which never does)."""
    before, _ = graphs
    peaks = {}
    for rules in ("torch", "reuse", "none"):
        rep = tmp_path / f"{rules}.json"
        assert main([str(before), "--report", str(rep), "--memory-rules", rules]) == 0
        r = json.loads(rep.read_text())
        peaks[rules] = r["peak_device_bytes"]
        assert ("inplace_elementwise" in r["memory_rules"]) == (rules == "reuse")
    one = 256 * 256 * 4
    assert peaks["torch"] == peaks["none"] == 5 * one and peaks["reuse"] == 4 * one


def test_baseline_plot_and_trace(graphs, tmp_path):
    before, after = graphs
    rep, png, svg, trace = (tmp_path / n for n in ("r.json", "m.png", "m.svg", "t.json"))
    assert main([str(after), "--baseline", str(before), "--report", str(rep), "--plot", str(png),
                 "--trace", str(trace)]) == 0
    r = json.loads(rep.read_text())
    assert r["swap_out_ops"] == 1 and r["swap_in_ops"] == 1 and r["link_busy_cycles"] > 0
    assert r["peak_device_bytes"] < r["baseline"]["peak_device_bytes"]
    assert r["peak_ratio"] < 1 and r["slowdown"] >= 1
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    t = json.loads(trace.read_text())
    counters = [e for e in t["traceEvents"] if e["ph"] == "C"]
    assert counters and max(e["args"]["bytes"] for e in counters) == r["peak_device_bytes"]
    assert {e["args"]["name"] for e in t["traceEvents"] if e["ph"] == "M"} >= {"VPU", "D2H", "H2D"}
    assert main([str(after), "--report", str(rep), "--plot", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()


def test_not_fitting_is_a_report(tmp_path):
    big = tmp_path / "big.mlir"
    big.write_text(GRAPH.replace("256x256", "65536x16384"))
    rep = tmp_path / "r.json"
    assert main([str(big), "--report", str(rep), "--target", V100]) == 0
    r = json.loads(rep.read_text())
    assert r["fits"] is False and r["peak_device_bytes"] > r["device_memory_bytes"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "nnx.tools.nnx_profile", *args], capture_output=True, text=True)


def test_errors_are_one_line_and_leave_nothing(graphs, tmp_path):
    before, _ = graphs
    rep = tmp_path / "r.json"
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main() {\n  %a = graph.nope() : () -> ()\n}\n")
    badt = tmp_path / "t.toml"
    badt.write_text('[host_link]\nduplex = "simplex"\n')
    cases = [
        ([str(tmp_path / "missing.mlir"), "--report", str(rep)], "cannot read"),
        ([str(bad), "--report", str(rep)], "bad.mlir:2"),
        ([str(before), "--report", str(rep), "--target", str(badt)], "t.toml: key"),
        ([str(before), "--report", str(rep), "--plot", str(tmp_path / "m.jpg")], "must end in .png or .svg"),
        ([str(before), "--report", str(rep), "--trace", str(tmp_path / "no" / "t.json")], "cannot write"),
        ([str(before)], "--report"),
        ([str(before), "--report", str(rep), "--memory-rules", "torch,nope"], "unknown memory rule 'nope'"),
    ]
    for args, text in cases:
        r = _cli(*args)
        assert r.returncode == 1, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and (lines[0].startswith("nnx-profile: error: ") or ": error: " in lines[0]) and text in lines[0], r.stderr
        assert not rep.exists()  # the report is not left behind when a later output fails
    assert sorted(os.listdir(tmp_path)) == sorted(["before.mlir", "after.mlir", "bad.mlir", "t.toml"])


def test_host_link_keys_are_validated(tmp_path):
    from nnx.target import TargetError, load_target

    t = load_target(V100)
    assert t.host_link.duplex == "full" and t.host_link.bytes_per_cycle == 8
    assert t.device.memory_bytes == 16 * 2**30
    for body, msg in [("\n[host_link]\nbytes_per_cycle = 0\n", "key 'host_link.bytes_per_cycle': must be a positive integer"),
                      ("\n[device]\nsize = 1\n", "key 'device.size': unknown key"),
                      ('\n[host_link]\nduplex = "simplex"\n', "key 'host_link.duplex': must be one of")]:
        p = tmp_path / "x.toml"
        p.write_text(open(V100).read().split("\n[device]")[0] + body)
        with pytest.raises(TargetError, match=msg):
            load_target(str(p))
    # absent tables: defaults derived from the storage unit
    d = load_target()
    assert d.device.memory_bytes == d.storage.bytes
    assert d.host_link.bytes_per_cycle == d.storage.dma_bytes_per_cycle
