"""Entry point `nnx-run` (tools/nnx_run.py) uses for the simulator mode: see cli.py."""

from nnx.sim.cli import main, run

__all__ = ["main", "run"]
