"""Design-space sweeps: nnx-sweep (docs/sweeps.md)."""
