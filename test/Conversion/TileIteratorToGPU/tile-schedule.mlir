// RUN: kge-opt %s --split-input-file --tile-schedule | FileCheck %s
// RUN: kge-opt %s --split-input-file --tile-schedule="warpgroup=false" \
// RUN:   | FileCheck %s --check-prefix=SYNC
// RUN: kge-opt %s --split-input-file --tile-schedule="cluster-m=4" \
// RUN:   | FileCheck %s --check-prefix=CLUSTER4
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu \
// RUN:   | FileCheck %s --check-prefix=LOWER
// RUN: not kge-opt %s --split-input-file --tile-schedule="cluster-m=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

// BAD: error: invalid cluster-m 3 (expected 1, 2 or 4)

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Half precision: warpgroup MMA from K = 1024 on when its grid fills the
// GPU, mma.sync in two tile sizes, CUDA cores for rows that are not whole
// 16-byte chunks.
// CHECK-LABEL: func.func @gemm_f16
// CHECK: schedule {
// CHECK-NEXT: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 2 min_k 1024 {
// CHECK-NEXT: %[[A:.*]] = tile.load input 0 dense via tma : !tile.tile<128x64xf16>
// CHECK-NEXT: %[[B:.*]] = tile.load input 1 dense via tma : !tile.tile<64x256xf16>
// CHECK-NEXT: %[[ACC:.*]] = tile.mma %[[A]] x %[[B]] f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
// CHECK-NEXT: tile.store %[[ACC]] staged : !tile.tile<128x256xf32>
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel "_mma" block [128, 128, 32] thread [8, 8] stages 4 {
// CHECK-NEXT: tile.load input 0 dense via async : !tile.tile<128x32xf16>
// CHECK-NEXT: tile.load input 1 dense via async : !tile.tile<32x128xf16>
// CHECK-NEXT: tile.mma %{{.*}} x %{{.*}} f16 : !tile.tile<128x32xf16> x !tile.tile<32x128xf16> -> !tile.tile<128x128xf32>
// CHECK-NEXT: tile.store %{{.*}} staged : !tile.tile<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel "_mma_small" block [64, 64, 32] thread [4, 8] stages 4 {
// CHECK: tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
// CHECK-NEXT: tile.load input 0 dense via shared : !tile.tile<64x16xf16>
// CHECK-NEXT: tile.load input 1 dense via shared : !tile.tile<16x64xf16>
// CHECK-NEXT: tile.compute %{{.*}}, %{{.*}} : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
// CHECK-NEXT: tile.store %{{.*}} dense : !tile.tile<64x64xf32>
// SYNC-LABEL: func.func @gemm_f16
// SYNC-NOT: _wgmma
// SYNC: tile.kernel "_mma" block [128, 128, 32] thread [8, 8] stages 4 {
// CLUSTER4-LABEL: func.func @gemm_f16
// CLUSTER4: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 4 min_k 1024 {
// LOWER-LABEL: gpu.module @gemm_f16_kernels
// LOWER-SAME: function = "gemm_f16_wgmma"
// LOWER-SAME: function = "gemm_f16_mma"
// LOWER-SAME: function = "gemm_f16_mma_small"
// LOWER-SAME: function = "gemm_f16_small"
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>

// A join may let a block skip its reduction: no clusters.
// CHECK-LABEL: func.func @joined_f16
// CHECK: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 min_k 1024 {
// CLUSTER4-LABEL: func.func @joined_f16
// CLUSTER4: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 min_k 1024 {
func.func @joined_f16(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                      %ka: memref<?xi32> {kge.param = "ka"}, %kb: memref<?xi32> {kge.param = "kb"},
                      %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B, %ka, %kb : memref<?x?xf16>, memref<?x?xf16>, memref<?xi32>, memref<?xi32>)
      outs(%C : memref<?x?xf32>)
      maps [#ik, #kj, #i, #j] accumulate add output dense
      when {
      ^bb0(%i: index, %j: index, %a: i32, %b: i32):
        %same = arith.cmpi eq, %a, %b : i32
        tile.yield %same : i1
      }
      inner {
      ^bb0(%a: f16, %b: f16, %x: i32, %y: i32):
        %wa = arith.extf %a : f16 to f32
        %wb = arith.extf %b : f16 to f32
        %v = arith.mulf %wa, %wb : f32
        tile.yield %v : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Distinct values: a hash set in global memory.
// CHECK-LABEL: func.func @distinct
// CHECK: tile.store %{{.*}} distinct : !tile.tile<128x128xf32>
// CHECK: tile.store %{{.*}} distinct : !tile.tile<64x64xf32>
func.func @distinct(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                    %v: memref<?xf32> {kge.param = "values"}, %n: memref<1xi64> {kge.param = "count"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%v, %n : memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output distinct
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// C += A B (linalg.matmul's semantics): the store combines into the output.
// CHECK-LABEL: func.func @update
// CHECK: tile.store %{{.*}} update : !tile.tile<128x128xf32>
func.func @update(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                  %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense {update}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// A schedule written by hand is kept by tile-schedule and followed by the
// lowering: one CUDA-core kernel of 32 x 32 pairs (256 threads of 2 x 2),
// the only kernel, so it always runs.
// CHECK-LABEL: func.func @hand_written
// CHECK: schedule {
// CHECK-NEXT: tile.kernel "_tiny" block [32, 32, 8] thread [2, 2] {
// CHECK-NOT: tile.kernel
// CHECK: return
// LOWER-LABEL: gpu.module @hand_written_kernels
// LOWER-SAME: block = ["256", "1", "1"], function = "hand_written_tiny", grid = ["ceildiv(N, 32)", "min(ceildiv(M, 32), 65535)", "ceildiv(ceildiv(M, 32), 65535)"], kind = "kernel"
// LOWER-NOT: when =
// LOWER: gpu.func @hand_written_tiny({{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// LOWER-NOT: gpu.func
// LOWER: }
func.func @hand_written(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                        %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_tiny" block [32, 32, 8] thread [2, 2] {
          %a = tile.load input 0 dense via shared : !tile.tile<32x8xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<8x32xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<32x8xf32>, !tile.tile<8x32xf32> -> !tile.tile<32x32xf32>
          tile.store %acc dense : !tile.tile<32x32xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// The CUDA-core kernel listed first: the tensor-core one still runs only on
// rows of whole 16-byte chunks (4 f32), the CUDA-core one on the others.
// LOWER-LABEL: gpu.module @cuda_first_kernels
// LOWER-SAME: function = "cuda_first_fma", {{.*}} when = "1 - (1 - min(1, K - K / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"
// LOWER-SAME: function = "cuda_first_mma", {{.*}} when = "(1 - min(1, K - K / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"
func.func @cuda_first(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                      %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_fma" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
        tile.kernel "_mma" block [64, 64, 16] thread [4, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x64xf32>
          %acc = tile.mma %a x %b tf32
              : !tile.tile<64x16xf32> x !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc staged : !tile.tile<64x64xf32>
        }
      }
  return
}
