// RUN: kge-opt %s --convert-tile-to-gpu="matrix-math=tf32x3" | FileCheck %s
// RUN: kge-opt %s --tile-schedule | FileCheck %s --check-prefix=SCHEDULE

// A tile function of two tasks (RGCN's layer: the root term stored, then
// each edge's message added into its destination node): one gpu.module of
// both tasks' kernels and one launch plan that runs the tasks in order.
// The second task's kernels are named <function>_t1..., its scratch
// buffers t1_..., and its steps refer to those.
// CHECK: gpu.module @rgcn_kernels
// CHECK-SAME: kge.launch_plan = [
// CHECK-SAME: function = "rgcn_mma"
// CHECK-SAME: function = "rgcn_small"
// CHECK-SAME: {buffer = "scratch:t1_counts", kind = "memset"}
// CHECK-SAME: {buffer = "scratch:t1_counts", kind = "pointer"}], block = ["256", "1", "1"], function = "kge_key_histogram"
// CHECK-SAME: {buffer = "scratch:t1_counts", kind = "pointer"}, {kind = "i64", value = "weight_d0"}, {buffer = "scratch:t1_lengths", kind = "pointer"}, {kind = "i32", value = "16"}, {buffer = "scratch:t1_tiles", kind = "pointer"}, {kind = "i32", value = "64"}, {buffer = "scratch:t1_long_tiles", kind = "pointer"}], block = ["1024", "1", "1"], function = "kge_key_scan_tiles"
// CHECK-SAME: {buffer = "scratch:t1_perm", kind = "pointer"}], block = ["256", "1", "1"], function = "kge_key_scatter"
// CHECK-SAME: {buffer = "scratch:t1_perm", kind = "memref", shape = ["M1"]}, {buffer = "scratch:t1_long_tiles", kind = "memref", shape = ["1 + 3 * ceildiv(M1, 64)"]}], block = ["256", "1", "1"], function = "rgcn_t1_mma_long"
// CHECK-SAME: function = "rgcn_t1_mma"
// CHECK-SAME: function = "rgcn_t1_small"
// CHECK-SAME: kge.scratch = [{count = "M1", dtype = "i32", name = "t1_perm"}, {count = "1 + 3 * (ceildiv(M1, 16) + weight_d0)", dtype = "i32", name = "t1_tiles"}, {count = "1 + 3 * ceildiv(M1, 64)", dtype = "i32", name = "t1_long_tiles"}, {count = "weight_d0", dtype = "i32", name = "t1_counts"}, {count = "weight_d0", dtype = "i32", name = "t1_lengths"}]
// CHECK: gpu.func @rgcn_mma(
// CHECK: gpu.func @rgcn_small(
// CHECK: gpu.func @rgcn_t1_mma_long(
// CHECK: gpu.func @rgcn_t1_mma(
// CHECK: gpu.func @rgcn_t1_small(
// Both tasks are scheduled.
// SCHEDULE: tile.task {{.*}} output dense
// SCHEDULE: } schedule {
// SCHEDULE: tile.kernel ""
// SCHEDULE: tile.task {{.*}} output aggregate
// SCHEDULE: } schedule {
// SCHEDULE: tile.kernel "_mma_long"
func.func @rgcn(%X: memref<?x?xf32> {kge.param = "x"}, %W: memref<?x?x?xf32> {kge.param = "weight"},
                %W0: memref<?x?xf32> {kge.param = "root"}, %b: memref<?xf32> {kge.param = "bias"},
                %norm: memref<?xf32> {kge.param = "norm"},
                %src: memref<?xi32> {kge.param = "src"}, %dst: memref<?xi32> {kge.param = "dst"},
                %etype: memref<?xi32> {kge.param = "etype"},
                %Out: memref<?x?xf32> {kge.param = "out"}) {
  tile.task ins(%X, %W0, %b : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      outs(%Out : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (j)>]
      accumulate add output dense
      inner {
      ^bb0(%x: f32, %w: f32, %bj: f32):
        %v = arith.mulf %x, %w : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %bj: f32):
        %p = arith.addf %acc, %bj : f32
        tile.yield %p : f32
      }
  tile.task ins(%X, %W, %norm : memref<?x?xf32>, memref<?x?x?xf32>, memref<?xf32>)
      keys(%dst : memref<?xi32>)
      outs(%Out : memref<?x?xf32>)
      gathers(%src, %etype : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>,
            affine_map<(i, j, k) -> (i)>]
      accumulate add output aggregate {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%x: f32, %w: f32, %n: f32):
        %v = arith.mulf %x, %w : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %n: f32):
        %p = arith.mulf %acc, %n : f32
        tile.yield %p : f32
      }
  return
}
