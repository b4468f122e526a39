// RUN: kge-opt %s -kge-lower-to-gpu | FileCheck %s
// RUN: kge-opt %s -kge-lower-to-gpu="cluster-m=1" | FileCheck %s --check-prefix=NOCLUSTER
// RUN: kge-opt %s -kge-lower-to-gpu="warpgroup=false" | FileCheck %s --check-prefix=SYNC
// RUN: kge-opt %s -kge-lower-to-gpu="block-m=64 block-n=64 block-k=16 thread-m=4 thread-n=4 matrix-math=fma" \
// RUN:   | FileCheck %s --check-prefix=SHAPE
// RUN: not kge-opt %s -kge-lower-to-gpu="cluster-m=3" 2>&1 | FileCheck %s --check-prefix=BAD

// kge-lower-to-gpu passes its tile options on to convert-tile-to-gpu: the
// warpgroup kernel in clusters of 2 by default, of 1 with cluster-m=1;
// mma.sync without it; one CUDA-core kernel of the given shape.

// CHECK: llvm.func @gemm_f16_wgmma
// CHECK-SAME: nvvm.cluster_dim = array<i32: 1, 2, 1>
// NOCLUSTER: llvm.func @gemm_f16_wgmma
// NOCLUSTER-NOT: nvvm.cluster_dim
// SYNC-NOT: _wgmma
// SYNC: mma.sync
// SHAPE-NOT: _wgmma
// SHAPE: kge.launch_plan
// SHAPE-SAME: grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"]
// SHAPE-NOT: mma.sync
// BAD: error: invalid cluster-m 3 (expected 1, 2 or 4)

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @gemm_f16(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense inner {
  ^bb0(%a: f16, %b: f16):
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    tile.yield %p : f32
  }
  return
}
