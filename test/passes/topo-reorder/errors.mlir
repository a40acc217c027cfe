// Bad options are one line naming the option, exit status 1, no output file.

// RUN: not nnx-opt %s -p 'topo-reorder{search=exhaustive}' 2>&1 | FileCheck %s --check-prefix=SEARCH
// RUN: not nnx-opt %s -p 'topo-reorder{cost=guess}' 2>&1 | FileCheck %s --check-prefix=COST
// RUN: not nnx-opt %s -p 'topo-reorder{max-orders=0}' 2>&1 | FileCheck %s --check-prefix=MAX
// RUN: not nnx-opt %s -p 'topo-reorder{time-limit=-1}' 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: not nnx-opt %s -p 'topo-reorder{timing=fast}' 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: rm -f %t.mlir && not nnx-opt %s -p 'topo-reorder{cost=estimate report="/nonexistent/dir/r.json"}' -o %t.mlir 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: not test -e %t.mlir

// SEARCH: search='exhaustive': expected one of auto, all, random, beam, heft, onnx
// COST: cost='guess': expected one of estimate, model, simulate
// MAX: max-orders=0: must be at least 1
// LIMIT: topo-reorder: time-limit=-1: must be at least 0
// TIMING: topo-reorder: timing='fast': expected one of direct, ir
// REPORT: topo-reorder: cannot write
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.relu(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = graph.sigmoid(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c = graph.add(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}
