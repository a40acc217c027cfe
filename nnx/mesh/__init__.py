"""Spatial compilation onto the many-core mesh (docs/mesh.md, "Compilation").

One concept per module:

* `errors`     -- `MeshFitError`, the structured "does not fit" reason;
* `partition`  -- which ops are split over how many cores, and the *stages* (the
  work of one core: one op part, or a run of whole ops);
* `placement`  -- stages onto cores (bisection, row-major, `nnx.cores` annotations);
* `core_graph` -- the graph function of one stage (sliced weights, concatenation of
  received pieces);
* `core_lowering` -- the core programs lowered side by side (forked workers);
* `stitch`     -- per-core chip programs joined by SEND/RECV into a `MeshProgram`;
* `latency`, `throughput` -- the latency and the first (proportional) throughput
  schedules' shares and placements;
* `pipeline_search`, `pipeline` -- the throughput schedule: the layer-pipeline
  search over plain data, and its graph and placement side;
* `compile`    -- `compile_for_mesh(module, target)`, the whole of it.
"""

#: the mesh schedule (docs/mesh.md, "Schedules"; nnx/mesh/compile.py SCHEDULES) of
#: nnx-compile's `--objective`, `lower-to-mesh{schedule}` and the Python entries
#: when none is named
DEFAULT_SCHEDULE = "latency"
