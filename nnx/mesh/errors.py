"""The reason a graph does not fit the mesh (docs/mesh.md, "Compilation")."""

from __future__ import annotations

from nnx.diagnostics import PassError


class MeshFitError(PassError):
    """The graph does not fit the mesh: `reason` ("cores" or "memory"), the op
    responsible (`op_name`, and the xDSL `op` when known), and the numbers
    `needed` against `available` (cores, or bytes of one core's memory).

    Its message is the one line `lower-to-mesh` and nnx-compile print."""

    def __init__(self, reason: str, op_name: str, needed: int, available: int, op=None, lowered: bool = False,
                 op_cores: int = 0, op_bytes: int = 0, core_memory: int = 0):
        #: True when a stage's lowered program overflowed its core (the plan fitted)
        self.lowered = lowered
        self.reason = reason
        self.op_name = op_name
        self.needed = int(needed)
        self.available = int(available)
        if reason == "cores":
            detail = ""
            if op_cores:  # the op taking the most cores: how many, and why
                detail = (f": {op_cores} cores for {op_bytes} bytes of weights and activations, "
                          f"a core has {core_memory} bytes of memory")
            text = (f"lower-to-mesh: the graph does not fit the mesh: {self.needed} cores needed, "
                    f"{self.available} available (op {op_name} needs the most{detail})")
        else:
            text = (f"lower-to-mesh: the graph does not fit the mesh: op {op_name} needs "
                    f"{self.needed} bytes on one core, a core has {self.available} bytes of memory")
        super().__init__(text, op)
