"""The lowering from graph (+ sparse) ops to chip instructions, one concern per module.

State (three small objects, bundled for the per-op functions by context.py):

* storage.py        -- storage buffers (`chip.buffer`), where each value is in storage
* residency.py      -- which results stay on chip, liveness, eviction, where a value is now
* stream.py         -- the emitted instructions with their accesses, unit round-robin
* cache.py          -- operand slots, their layout, the heap of resident buffers

Per-op lowering functions (first parameter: the `LoweringContext`):

* fusion.py         -- epilogues, bias-Gemm, accumulator init, Transpose views
* group_chain.py    -- Conv -> depthwise Conv -> Conv per group of channels
* data_movement.py  -- Concat/Split/Slice copies, Gather as indirect DMA
* compute.py        -- compute ops as tiles (plan, slots, emission)
* sparse_weights.py -- compacted weights, connection data, masks

and lowering.py (`lower_function`: the walk over one function and its chip.program),
deps.py (dependencies between instructions, SIGNAL/WAIT placement), errors.py.

The passes that use it: passes/chip_lower.py, chip_allocate.py, chip_schedule.py,
chip_sync.py and the composite passes/lower_to_chip.py.
"""
