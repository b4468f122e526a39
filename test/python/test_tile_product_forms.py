"""Product forms: tile tasks whose inner computation is a sum of terms
row(i, k) * col(j, k), each factor computed from one side's operands
(DistMult's (h * r) . t, ComplEx's four products, factors of any
elementwise operations), on the CPU path against NumPy, and the GPU
lowering's choice of tensor cores for them (mma.sync, and warpgroup MMA
on stages the threads write where every operand is stored k-contiguous).
The tasks are also the GPU suite's (build_tile_bundles.py --parts
products,thread_stages, test/gpu/test_tile_products.py).
"""

import numpy as np
import pytest

from kge import compiler, ir

from product_forms import THREAD_STAGES, TASKS, check, inputs, outputs, reference, typed


@pytest.mark.parametrize("name", sorted(TASKS))
def test_product_form_on_the_cpu_matches_numpy(name):
    module = ir.Module.parse(ir.Context(), typed(TASKS[name], "f32"))
    fn = compiler.compile_cpu(module, name)
    rng = np.random.default_rng(len(name))
    M, N, K = 37, 29, 24
    x = inputs(name, rng, M, N, K)
    out = outputs(name, M, N)
    fn({**x, **out})
    check(name, out, reference(name, x), 2e-5)


def lowered(name, element, options=""):
    module = ir.Module.parse(ir.Context(), typed(TASKS[name], element))
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu" + options)
    pm.run(module)
    return str(module)


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("element,options", [("f16", ""), ("bf16", ""),
                                             ("f32", "{matrix-math=tf32}"),
                                             ("f32", "{matrix-math=tf32x3}")])
def test_product_forms_take_mma_sync(name, element, options):
    gpu = lowered(name, element, options)
    # (Top-k sorts a block's pairs: only the 64 x 64 kernel.)
    assert (f"@{name}_mma(" in gpu or f"@{name}_mma_small(" in gpu) and "mma.sync" in gpu
    # Warpgroup MMA on stages the threads write: operands all stored
    # k-contiguous (ComplEx's tail part is not), no top-k, no matrix per
    # key; not at tf32x3. Its producer warpgroup computes the factors.
    threads = name in THREAD_STAGES and "tf32x3" not in options
    assert (f"@{name}_wgmma(" in gpu) == threads
    if threads:
        kernel = gpu[gpu.index(f"gpu.func @{name}_wgmma("):]
        kernel = kernel[:kernel.index("gpu.return")]
        assert "known_block_size = array<i32: 384, 1, 1>" in kernel
        assert "nvvm.fence.proxy" in kernel and "nvvm.wgmma.mma_async" in kernel
    # The CUDA-core kernel stays for rows that are not 16-byte chunks.
    assert f"@{name}_small(" in gpu or name == "segments"


def test_complex_merges_its_four_products_into_two_terms():
    """Terms sharing a column factor merge: two products a fragment pair
    and step, not four."""
    gpu = lowered("complex", "bf16")
    kernel = gpu[gpu.index("gpu.func @complex_mma("):]
    kernel = kernel[:kernel.index("gpu.return")]
    loop = kernel[kernel.index("scf.for"):]
    # 128 x 128 x 32 stages, 8 warps of 4 x 4 products of 16 x 8 x 16: 16
    # fragment pairs, two steps of k: 32 per term.
    assert loop.count("nvvm.mma.sync") == 2 * 32


def test_f32_product_forms_stay_on_cuda_cores_by_default():
    gpu = lowered("distmult", "f32")
    assert "mma.sync" not in gpu and "@distmult_mma(" not in gpu


def test_transe_is_three_terms():
    """(h + r - t)^2 multiplies out: ||h + r||^2 (against ones), -2 (h + r)
    . t and ||t||^2 (ones against it)."""
    gpu = lowered("transe", "bf16")
    kernel = gpu[gpu.index("gpu.func @transe_mma("):]
    loop = kernel[kernel.index("scf.for"):kernel.index("gpu.return")]
    # (The products are in the k loop only.)
    assert loop.count("nvvm.mma.sync") == 3 * 32
    # The computed factors and the ones are zero past K (masked element by
    # element: bf16 selects).
    assert "arith.select" in loop and ": bf16" in loop


@pytest.mark.parametrize("body", [
    # An operation other than + - * / on values of both sides.
    "%s = arith.maximumf %u, %w : f32",
    "%p = arith.mulf %u, %w : f32\n        %s = math.exp %p : f32",
    "%d = arith.subf %u, %w : f32\n        %p = arith.mulf %d, %d : f32\n"
    "        %s = math.sqrt %p : f32",
    # A value of the rows alone: nothing to multiply.
    "%s = arith.mulf %u, %u : f32",
])
def test_what_is_no_product_form_stays_on_cuda_cores(body):
    text = f"""
func.func @q(%U: memref<?x?xf32> {{kge.param = "U"}}, %W: memref<?x?xf32> {{kge.param = "W"}},
             %S: memref<?x?xf32> {{kge.param = "S"}}) {{
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense
      inner {{
      ^bb0(%u: f32, %w: f32):
        {body}
        tile.yield %s : f32
      }}
  return
}}
"""
    module = ir.Module.parse(ir.Context(), text)
    pm = ir.PassManager(module.context)
    pm.add("convert-tile-to-gpu{matrix-math=tf32}")
    pm.run(module)
    gpu = str(module)
    assert "mma.sync" not in gpu and "@q_mma(" not in gpu
