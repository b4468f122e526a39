// RUN: kge-opt %s -split-input-file --tile-schedule=matrix-math=tf32 | FileCheck %s --check-prefix=SCHEDULE
// RUN: kge-opt %s -split-input-file --convert-tile-to-gpu=matrix-math=tf32 | FileCheck %s

// Output per_key of a plain product whose operands are stored along i and
// j (an outer product summed per key: TransR's matrices' gradient, the
// shared negatives' gradient): on mma.sync at TF32 in 64 x 64 tiles, each
// step's row copied in 16-byte chunks from its place in the sorted order,
// where the rows are whole chunks; on CUDA cores otherwise. Both take the
// same tiles of at most 512 steps of one key.
// SCHEDULE-LABEL: func.func @outer_sum
// SCHEDULE: tile.kernel "_mma" block [64, 64, 16] thread [4, 8] stages 4 {
// SCHEDULE-NEXT: tile.load input 0 dense sorted via async : !tile.tile<16x64xf32>
// SCHEDULE-NEXT: tile.load input 1 dense sorted via async : !tile.tile<16x64xf32>
// SCHEDULE-NEXT: tile.mma %{{.*}} x %{{.*}} tf32
// SCHEDULE: tile.store %{{.*}} per_key : !tile.tile<64x64xf32>
// SCHEDULE: tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
// SCHEDULE: tile.compute
// SCHEDULE: tile.store %{{.*}} per_key : !tile.tile<64x64xf32>

// CHECK-LABEL: gpu.module @outer_sum_kernels
// CHECK-SAME: function = "kge_key_scan_tiles"
// CHECK-SAME: block = ["128", "1", "1"], function = "outer_sum_mma", grid = ["ceildiv(K, 512) + T", "ceildiv(N, 64)", "ceildiv(M, 64)"], kind = "kernel", module = "outer_sum_kernels", shared_bytes = "32768", when = "(1 - min(1, M - M / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"}
// CHECK-SAME: block = ["256", "1", "1"], function = "outer_sum_small", grid = ["ceildiv(K, 512) + T", "ceildiv(N, 64)", "ceildiv(M, 64)"], kind = "kernel", module = "outer_sum_kernels", shared_bytes = "0", when = "1 - (1 - min(1, M - M / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"}
// CHECK: gpu.func @outer_sum_mma(
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.mma.sync
// CHECK: memref.atomic_rmw addf
func.func @outer_sum(%U: memref<?x?xf32> {kge.param = "U"},
                     %V: memref<?x?xf32> {kge.param = "V"},
                     %key: memref<?xi32> {kge.param = "key"},
                     %C: memref<?x?x?xf32> {kge.param = "C", kge.dims = ["T", "", ""]}) {
  tile.task ins(%U, %V : memref<?x?xf32>, memref<?x?xf32>) keys(%key : memref<?xi32>)
      outs(%C : memref<?x?x?xf32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

// A product form of three factors (a weight per step) keeps CUDA cores.
// SCHEDULE-LABEL: func.func @weighted
// SCHEDULE: tile.kernel "" block [64, 64, 16] thread [4, 4] {
// SCHEDULE-NOT: tile.mma
// SCHEDULE: tile.compute
func.func @weighted(%U: memref<?x?xf32> {kge.param = "U"},
                    %V: memref<?x?xf32> {kge.param = "V"},
                    %w: memref<?xf32> {kge.param = "w"},
                    %key: memref<?xi32> {kge.param = "key"},
                    %C: memref<?x?x?xf32> {kge.param = "C", kge.dims = ["T", "", ""]}) {
  tile.task ins(%U, %V, %w : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      keys(%key : memref<?xi32>) outs(%C : memref<?x?x?xf32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>,
            affine_map<(i, j, k) -> (k)>]
      accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32, %n: f32):
        %p = arith.mulf %a, %b : f32
        %v = arith.mulf %p, %n : f32
        tile.yield %v : f32
      }
  return
}
