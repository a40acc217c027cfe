"""A pass plugin for test/tools/nnx-opt/pass-plugin.mlir: relu -> leaky_relu{alpha}."""

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from nnx.dialects import graph


@dataclass(frozen=True)
class _ToLeaky(RewritePattern):
    alpha: float

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        ty = op.results[0].type
        rewriter.replace(op, graph.LeakyReluOp.build_onnx(op.onnx_inputs(), {"alpha": self.alpha}, [ty]))


@dataclass(frozen=True)
class ReluToLeakyPass(ModulePass):
    """relu(x) -> leaky_relu(x) with the given alpha."""

    name = "test-relu-to-leaky"
    alpha: float = 0.01

    def apply(self, ctx, op: ModuleOp) -> None:
        PatternRewriteWalker(_ToLeaky(self.alpha)).rewrite_module(op)
