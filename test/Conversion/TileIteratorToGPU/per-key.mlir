// RUN: kge-opt %s -split-input-file --tile-schedule | FileCheck %s --check-prefix=SCHEDULE
// RUN: kge-opt %s -split-input-file --convert-tile-to-gpu | FileCheck %s

// Output per_key (a typed linear layer's weight gradient): the edges (k)
// sorted by their type, cut into tiles of at most 512 steps of one type; a
// block per tile and 64 x 64 tile of the type's matrix on CUDA cores, its
// rows and columns gathered along k through the sorted order, its partial
// sums added into the matrix by atomics. The result is cleared first.
// SCHEDULE-LABEL: func.func @weight_gradient
// SCHEDULE: tile.kernel "" block [64, 64, 16] thread [4, 4] {
// SCHEDULE-NEXT: tile.load input 0 gathered sorted via shared : !tile.tile<16x64xf32>
// SCHEDULE-NEXT: tile.load input 1 gathered sorted via shared : !tile.tile<16x64xf32>
// SCHEDULE-NEXT: tile.load input 2 dense sorted via shared : !tile.tile<16xf32>
// SCHEDULE-NEXT: tile.compute
// SCHEDULE-NEXT: tile.store %{{.*}} per_key : !tile.tile<64x64xf32>

// CHECK-LABEL: gpu.module @weight_gradient_kernels
// CHECK-SAME: kge.launch_plan = [{buffer = "param:dW", kind = "memset"}, {buffer = "scratch:counts", kind = "memset"},
// CHECK-SAME: function = "kge_key_histogram"
// CHECK-SAME: {kind = "i32", value = "512"}, {buffer = "scratch:tiles", kind = "pointer"}
// CHECK-SAME: function = "kge_key_scan_tiles"
// CHECK-SAME: function = "kge_key_scatter"
// CHECK-SAME: {buffer = "scratch:perm", kind = "memref", shape = ["K"]}, {buffer = "scratch:tiles", kind = "memref", shape = ["1 + 3 * (ceildiv(K, 512) + min(T, T))"]}], block = ["256", "1", "1"], function = "weight_gradient", grid = ["ceildiv(K, 512) + min(T, T)", "ceildiv(N, 64)", "ceildiv(M, 64)"]
// CHECK-SAME: kge.signature = {name = "weight_gradient", params = [{dtype = "f32", name = "x", role = "table", shape = ["K", "M"]}, {dtype = "f32", name = "g", role = "table", shape = ["g_d0", "N"]}, {dtype = "f32", name = "norm", role = "table", shape = ["K"]}, {dtype = "i32", indexes = ["x"], name = "src", role = "indices", shape = ["K"]}, {dtype = "i32", indexes = ["g"], name = "dst", role = "indices", shape = ["K"]}, {dtype = "i32", indexes = ["dW", "w"], name = "etype", role = "indices", shape = ["K"]}, {dtype = "f32", name = "w", role = "table", shape = ["T", "M", "N1"]}, {dtype = "f32", name = "y", role = "output", shape = ["K", "N1"]}, {dtype = "f32", name = "dW", role = "result", shape = ["T", "M", "N"]}]}
// CHECK: gpu.func @weight_gradient(
// CHECK: gpu.block_id z
// CHECK: memref.atomic_rmw addf
func.func @weight_gradient(%x: memref<?x?xf32> {kge.param = "x"},
                           %g: memref<?x?xf32> {kge.param = "g"},
                           %norm: memref<?xf32> {kge.param = "norm"},
                           %src: memref<?xi32> {kge.param = "src"},
                           %dst: memref<?xi32> {kge.param = "dst"},
                           %etype: memref<?xi32> {kge.param = "etype"},
                           %w: memref<?x?x?xf32> {kge.param = "w", kge.dims = ["T", "", ""]},
                           %y: memref<?x?xf32> {kge.param = "y"},
                           %dW: memref<?x?x?xf32> {kge.param = "dW", kge.dims = ["T", "", ""], kge.result}) {
  tile.task ins(%x, %g, %norm : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      keys(%etype : memref<?xi32>) outs(%dW : memref<?x?x?xf32>)
      gathers(%src, %dst : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>,
            affine_map<(i, j, k) -> (k)>]
      accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32, %n: f32):
        %p = arith.mulf %a, %b : f32
        %v = arith.mulf %p, %n : f32
        tile.yield %v : f32
      }
  // (The relation matrices' count names the gradient's: w, whose matrix
  // each edge's row of x multiplies, shares its symbol T.)
  tile.task ins(%x, %w : memref<?x?xf32>, memref<?x?x?xf32>) outs(%y : memref<?x?xf32>)
      gathers(%etype : memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output dense {gathered = [[1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

// A dense update whose output is small and whose reduction is long (x^T y
// over a graph's nodes): GAMUT's two kernels, then the split reduction,
// which runs where neither fills the GPU: block x takes 1024 steps of k and
// adds its partial sums into the output by atomics. The result is cleared
// first (the task adds into it).
// SCHEDULE-LABEL: func.func @nodes_gram
// SCHEDULE: tile.kernel "" block [128, 128, 8] thread [8, 8] {
// SCHEDULE: tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
// SCHEDULE: tile.kernel "_split_k" block [64, 64, 16] thread [4, 4] split_k {
// SCHEDULE: tile.store %{{.*}} update : !tile.tile<64x64xf32>

// CHECK-LABEL: gpu.module @nodes_gram_kernels
// CHECK-SAME: kge.launch_plan = [{buffer = "param:c", kind = "memset"},
// CHECK-SAME: function = "nodes_gram", grid = ["ceildiv(N, 128)", "min(ceildiv(M, 128), 65535)", "ceildiv(ceildiv(M, 128), 65535)"], kind = "kernel", module = "nodes_gram_kernels", shared_bytes = "0", when = "ceildiv(N, 128) * ceildiv(M, 128) / 132"}
// CHECK-SAME: function = "nodes_gram_split_k", grid = ["ceildiv(K, 1024)", "ceildiv(N, 64)", "ceildiv(M, 64)"], kind = "kernel", module = "nodes_gram_kernels", shared_bytes = "0", when = "(1 - min(1, ceildiv(N, 128) * ceildiv(M, 128) / 132)) * (1 - min(1, ceildiv(N, 64) * ceildiv(M, 64) / 132))"}
// CHECK: gpu.func @nodes_gram_split_k(
// CHECK: memref.atomic_rmw addf
func.func @nodes_gram(%x: memref<?x?xf32> {kge.param = "x"}, %y: memref<?x?xf32> {kge.param = "y"},
                      %c: memref<?x?xf32> {kge.param = "c", kge.result}) {
  tile.task ins(%x, %y : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output dense {update}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

// Two matrices per key by the same keys and tiles: the second task reads
// the first one's sorted order (no second sort, no second sort's scratch).
// CHECK-LABEL: gpu.module @two_gradients_kernels
// CHECK-SAME: kge.launch_plan = [{buffer = "param:dW", kind = "memset"}, {buffer = "param:dV", kind = "memset"}, {buffer = "scratch:counts", kind = "memset"},
// CHECK-SAME: function = "kge_key_scatter"
// CHECK-SAME: function = "two_gradients"
// CHECK-SAME: {buffer = "scratch:perm", kind = "memref", shape = ["K"]}, {buffer = "scratch:tiles", kind = "memref", shape = ["1 + 3 * (ceildiv(K, 512) + min(T, T))"]}], block = ["256", "1", "1"], function = "two_gradients_t1"
// CHECK-SAME: kge.scratch = [{count = "K", dtype = "i32", name = "perm"}, {count = "1 + 3 * (ceildiv(K, 512) + min(T, T))", dtype = "i32", name = "tiles"}, {count = "min(T, T)", dtype = "i32", name = "counts"}, {count = "min(T, T)", dtype = "i32", name = "lengths"}]
// CHECK-NOT: t1_perm
func.func @two_gradients(%x: memref<?x?xf32> {kge.param = "x"},
                         %g: memref<?x?xf32> {kge.param = "g"},
                         %src: memref<?xi32> {kge.param = "src"},
                         %dst: memref<?xi32> {kge.param = "dst"},
                         %etype: memref<?xi32> {kge.param = "etype"},
                         %dW: memref<?x?x?xf32> {kge.param = "dW", kge.dims = ["T", "", ""], kge.result},
                         %dV: memref<?x?x?xf32> {kge.param = "dV", kge.dims = ["T", "", ""], kge.result}) {
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>)
      keys(%etype : memref<?xi32>) outs(%dW : memref<?x?x?xf32>)
      gathers(%src, %dst : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  tile.task ins(%g, %x : memref<?x?xf32>, memref<?x?xf32>)
      keys(%etype : memref<?xi32>) outs(%dV : memref<?x?x?xf32>)
      gathers(%dst, %src : memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}
