"""The one place every nnx pass is registered: pass name -> class factory.

nnx-opt (tools/nnx_opt.py) and the other drivers build their pass pipelines from
`ALL_PASSES`. Factories import the pass module only when called, so start-up does
not pay for passes a pipeline does not use. To add a pass: write passes/<name>.py
with a `@dataclass(frozen=True)` ModulePass subclass (options are its fields) and add
one line below, keyed by the pass's kebab-case `name`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


def _graph_fold_constants() -> type[ModulePass]:
    from nnx.passes.graph_fold_constants import GraphFoldConstantsPass

    return GraphFoldConstantsPass


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _canonicalize,
    "dce": _dce,
    "graph-fold-constants": _graph_fold_constants,
    "graph-autodiff": lambda: __import__("nnx.passes.graph_autodiff", fromlist=["GraphAutodiffPass"]).GraphAutodiffPass,
    "graph-fuse": lambda: __import__("nnx.passes.graph_fuse", fromlist=["GraphFusePass"]).GraphFusePass,
    "neuron-group-map": lambda: __import__("nnx.passes.neuron_group_map", fromlist=["NeuronGroupMapPass"]).NeuronGroupMapPass,
    "graph-hoist-addends": lambda: __import__("nnx.passes.graph_hoist_addends", fromlist=["GraphHoistAddendsPass"]).GraphHoistAddendsPass,
    "graph-transpose-views": lambda: __import__("nnx.passes.graph_transpose_views", fromlist=["GraphTransposeViewsPass"]).GraphTransposeViewsPass,
    "chip-lower": lambda: __import__("nnx.passes.chip_lower", fromlist=["ChipLowerPass"]).ChipLowerPass,
    "chip-allocate": lambda: __import__("nnx.passes.chip_allocate", fromlist=["ChipAllocatePass"]).ChipAllocatePass,
    "chip-schedule": lambda: __import__("nnx.passes.chip_schedule", fromlist=["ChipSchedulePass"]).ChipSchedulePass,
    "chip-sync": lambda: __import__("nnx.passes.chip_sync", fromlist=["ChipSyncPass"]).ChipSyncPass,
    "chip-link": lambda: __import__("nnx.passes.chip_link", fromlist=["ChipLinkPass"]).ChipLinkPass,
    "lower-to-chip": lambda: __import__("nnx.passes.lower_to_chip", fromlist=["LowerToChipPass"]).LowerToChipPass,
    "swap-insert": lambda: __import__("nnx.passes.swap_insert", fromlist=["SwapInsertPass"]).SwapInsertPass,
    "tensor-timing": lambda: __import__("nnx.passes.tensor_timing", fromlist=["TensorTimingPass"]).TensorTimingPass,
    "op-split": lambda: __import__("nnx.passes.op_split", fromlist=["OpSplitPass"]).OpSplitPass,
    "topo-reorder": lambda: __import__("nnx.passes.topo_reorder", fromlist=["TopoReorderPass"]).TopoReorderPass,
    "lower-to-mesh": lambda: __import__("nnx.passes.lower_to_mesh", fromlist=["LowerToMeshPass"]).LowerToMeshPass,
    "subgraph-split": lambda: __import__("nnx.passes.subgraph_split", fromlist=["SubgraphSplitPass"]).SubgraphSplitPass,
    "subgraph-fuse": lambda: __import__("nnx.passes.subgraph_fuse", fromlist=["SubgraphFusePass"]).SubgraphFusePass,
    "sparsify": lambda: __import__("nnx.passes.sparsify", fromlist=["SparsifyPass"]).SparsifyPass,
}
"""Pass name (as written in pipelines) -> function returning the pass class."""
