"""Tile tasks with a reduce output on the CPU path against NumPy: TransR's
score through a matrix per row's key with a pair operand and a root,
RESCAL's with a pair operand gathered by another index, a joined row
maximum; and the GPU lowering's kernels for them (the same tasks are the
GPU suite's: build_tile_bundles.py --parts reduce,
test/gpu/test_tile_reduce.py)."""

import numpy as np
import pytest

from kge import compiler, ir

from reduce_tasks import TASKS, check, inputs, reference, typed

SIZES = [(1, 8, 8), (37, 20, 12), (130, 41, 45), (300, 64, 33)]


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("M,N,K", SIZES, ids=[f"{m}x{n}x{k}" for m, n, k in SIZES])
def test_reduce_task_on_the_cpu_matches_numpy(name, M, N, K):
    module = ir.Module.parse(ir.Context(), typed(TASKS[name], "f32"))
    fn = compiler.compile_cpu(module, name)
    rng = np.random.default_rng(M * 31 + N * 7 + K)
    x = inputs(name, rng, M, N, K)
    out = np.full(M, np.nan, dtype=np.float32)
    fn({**x, "S": out})
    expected = reference(name, x)
    assert check(out, expected, 2e-5), f"max error {np.nanmax(np.abs(out - expected))}"
    # The comparison catches one wrong row.
    finite = np.flatnonzero(np.isfinite(expected))
    out[finite[len(finite) // 2]] += 1e-3 * max(1.0, np.abs(expected[finite]).max())
    assert not check(out, expected, 2e-5)


@pytest.mark.parametrize("name,element,options,kernels", [
    ("transr", "f32", "", ("transr_mma_long", "transr_mma", "transr_small")),
    ("transr", "f32", "{matrix-math=fma}", ("transr",)),
    ("rescal", "bf16", "", ("rescal_mma_long", "rescal_mma", "rescal_small")),
    ("row_max", "f32", "{matrix-math=tf32x3}", ("row_max_mma", "row_max_mma_small", "row_max_small")),
    ("row_max", "f32", "", ("row_max", "row_max_small")),
])
def test_reduce_kernels_and_their_finalize(name, element, options, kernels):
    """Each kernel of the schedule writes its partial values; one finalize
    kernel, launched after whichever ran (a kernel of long runs runs with
    its partner, before it); never warpgroup MMA."""
    module = ir.Module.parse(ir.Context(), typed(TASKS[name], element))
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu" + options)
    pm.run(module)
    gpu = str(module)
    funcs = sorted(set(part.split("(")[0] for part in gpu.split("gpu.func @")[1:]))
    assert funcs == sorted(kernels + (f"{name}_finalize",))
    launches = len([k for k in kernels if not k.endswith("_long")])
    assert gpu.count(f'function = "{name}_finalize"') == launches
    assert "scratch:partials" in gpu and "wgmma" not in gpu
