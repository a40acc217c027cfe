"""Training graphs: reverse-mode differentiation of graph-dialect functions.

Used by the `graph-autodiff` pass (passes/graph_autodiff.py; docs/training.md):

* emitter.py       builds backward ops, result types from the ops' shape rules;
* rules.py         the `@backward` registry, with one module per op family:
                   rules_elementwise, rules_nn, rules_tensor, rules_reduce;
* differentiate.py parameters, activity analysis and the reverse sweep;
* loss.py          cross-entropy and mse losses and their seed gradients;
* optimizers.py    sgd, momentum and adam updates.
"""
