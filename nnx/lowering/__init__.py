"""The lowering from graph (+ sparse) ops to chip instructions, one concern per module.

* storage.py        -- tensors in storage (and resident views), value helpers
* cache.py          -- operand slots, their layout, the heap of resident buffers
* residency.py      -- which results stay on chip, liveness, eviction
* fusion.py         -- epilogues, bias-Gemm, accumulator init, Transpose views
* group_chain.py    -- Conv -> depthwise Conv -> Conv per group of channels
* data_movement.py  -- Concat/Split/Slice copies, Gather as indirect DMA
* compute.py        -- compute ops as tiles (plan, slots, emission)
* sparse_weights.py -- compacted weights, connection data, masks
* lowering.py       -- the `Lowering` of one function and its chip.program
* deps.py           -- dependencies between instructions, SIGNAL/WAIT placement

The passes that use it: passes/chip_lower.py, chip_allocate.py, chip_schedule.py,
chip_sync.py and the composite passes/lower_to_chip.py.
"""
