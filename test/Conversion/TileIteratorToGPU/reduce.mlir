// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=fma" | FileCheck %s --check-prefix=FMA
// RUN: kge-opt %s --split-input-file --tile-schedule | FileCheck %s --check-prefix=SCHEDULE

// TransR's score through the segment iterators: a matrix per row's key
// (3xTF32 mma.sync by default for f32 matrices per key, a CUDA-core kernel
// beside it), a pair operand (the relation's row along j), the reduce
// output. Each kernel writes a partial value per row and column tile into
// scratch memory; the finalize kernel combines them in column order where
// that kernel ran (from the identity: no column tiles at N = 0), then takes
// the root.
// CHECK-LABEL: gpu.module @transr_kernels
// CHECK-SAME: function = "kge_key_scan_tiles"
// CHECK-SAME: {buffer = "scratch:partials", kind = "memref", shape = ["M * ceildiv(N, 128)"]}], block = ["128", "1", "1"], function = "transr_mma", grid = ["ceildiv(M, 16) + min(W_d0, R_d0)", "ceildiv(N, 128)", "1"]
// CHECK-SAME: {args = [{buffer = "scratch:partials", kind = "memref", shape = ["M * ceildiv(N, 128)"]}, {buffer = "param:S", kind = "memref", shape = ["M"]}, {kind = "i64", value = "ceildiv(N, 128)"}], block = ["256", "1", "1"], function = "transr_finalize", grid = ["ceildiv(M, 256)", "1", "1"], kind = "kernel", module = "transr_kernels", shared_bytes = "0", when = "(1 - min(1, K - K / 4 * 4)) * (1 - min(1, N - N / 4 * 4))"}
// CHECK-SAME: function = "transr_small"
// CHECK-SAME: function = "transr_finalize"
// CHECK-SAME: {count = "M * ceildiv(N, 128)", dtype = "f32", name = "partials"}
// CHECK-SAME: {dtype = "f32", name = "S", role = "output", shape = ["M"]}
// The mma kernel's slots: four warps along the columns, four lanes a row.
// CHECK: gpu.func @transr_mma({{.*}}, %[[PARTIALS:arg[0-9]+]]: memref<?xf32>) workgroup(%[[SLOTS:arg[0-9]+]] : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: nvgpu.mma.sync
// CHECK: memref.store %{{.*}}, %[[SLOTS]][%{{.*}}, %{{.*}}]
// CHECK: gpu.barrier
// CHECK: memref.load %[[SLOTS]][%c0{{.*}}, %[[ROW:arg[0-9]+]]]
// CHECK: memref.load %[[SLOTS]][%c15{{.*}}, %[[ROW]]]
// CHECK: memref.store %{{.*}}, %[[PARTIALS]][%{{.*}}] : memref<?xf32>
// CHECK: gpu.barrier
// The CUDA-core kernel's slots: the 32 threads along a row's columns.
// CHECK: gpu.func @transr_small({{.*}}) workgroup({{.*}}, %{{.*}} : memref<32x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: gpu.func @transr_finalize(%[[P:arg[0-9]+]]: memref<?xf32>, %[[OUT:arg[0-9]+]]: memref<?xf32>, %[[TILES:arg[0-9]+]]: i64)
// CHECK: %[[N:.*]] = arith.index_cast %[[TILES]] : i64 to index
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[SUM:.*]] = scf.for %[[T:.*]] = %c0{{.*}} to %[[N]] step %c1{{.*}} iter_args(%[[X:.*]] = %[[ZERO]]) -> (f32)
// CHECK: memref.load %[[P]][%{{.*}}]
// CHECK: arith.addf %[[X]]
// CHECK: %[[ROOT:.*]] = math.sqrt %[[SUM]] fastmath<contract> : f32
// CHECK: memref.store %[[ROOT]], %[[OUT]]
// FMA-LABEL: gpu.module @transr_kernels
// FMA-NOT: transr_mma
// FMA: gpu.func @transr(
// FMA: gpu.func @transr_finalize(
// SCHEDULE-LABEL: func.func @transr
// SCHEDULE: tile.kernel "_mma" block [16, 128, 16] thread [2, 8] stages 4
// SCHEDULE: tile.mma %{{.*}}, %{{.*}} x %{{.*}} tf32x3
// SCHEDULE: tile.store %{{.*}} reduce with %{{.*}} : !tile.tile<16x128xf32>, !tile.tile<16x128xf32>
// SCHEDULE: tile.kernel "_small" block [16, 128, 8] thread [2, 4]
// SCHEDULE: tile.load input 3 gathered sorted via registers : !tile.tile<16x128xf32>
func.func @transr(%E: memref<?x?xf32> {kge.param = "E"}, %W: memref<?x?x?xf32> {kge.param = "W"},
                  %R: memref<?x?xf32> {kge.param = "R"},
                  %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                  %t: memref<?xi32> {kge.param = "t"}, %S: memref<?xf32> {kge.param = "S"}) {
  tile.task ins(%E, %E, %W, %R : memref<?x?xf32>, memref<?x?xf32>, memref<?x?x?xf32>, memref<?x?xf32>)
      outs(%S : memref<?xf32>)
      gathers(%h, %t, %r, %r : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (i, k, j)>, affine_map<(i, j, k) -> (i, j)>]
      accumulate add output reduce {gathered = [[0, 0], [1, 0], [2, 0], [3, 0]]}
      inner {
      ^bb0(%eh: f32, %et: f32, %w: f32, %rel: f32):
        %d = arith.subf %eh, %et : f32
        %v = arith.mulf %d, %w : f32
        tile.yield %v : f32
      }
      project {
      ^bb0(%acc: f32, %i: index, %j: index, %rel: f32):
        %x = arith.addf %acc, %rel : f32
        %sq = arith.mulf %x, %x : f32
        tile.yield %sq : f32
      }
      finalize {
      ^bb0(%sum: f32, %i: index):
        %norm = math.sqrt %sum : f32
        tile.yield %norm : f32
      }
  return
}

// -----

// Without segments: a row's largest value of a GEMM whose join rejects
// some pairs (they count as the identity); the CUDA-core kernels (128 x
// 128 and 64 x 64) each take their own number of column tiles, the partial
// values as many as the narrowest kernel writes.
// CHECK-LABEL: gpu.module @row_max_kernels
// CHECK-SAME: function = "row_max", grid = ["ceildiv(N, 128)", "min(ceildiv(M, 128), 65535)", "ceildiv(ceildiv(M, 128), 65535)"]
// CHECK-SAME: {kind = "i64", value = "ceildiv(N, 128)"}
// CHECK-SAME: function = "row_max_small", grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"]
// CHECK-SAME: {kind = "i64", value = "ceildiv(N, 64)"}
// CHECK-SAME: {count = "M * ceildiv(N, 64)", dtype = "f32", name = "partials"}
// CHECK: gpu.func @row_max({{.*}}) workgroup({{.*}}, %{{.*}} : memref<16x128xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: gpu.func @row_max_finalize
// CHECK: arith.maximumf
func.func @row_max(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                   %lo: memref<?xf32> {kge.param = "lo"}, %S: memref<?xf32> {kge.param = "S"}) {
  tile.task ins(%A, %B, %lo : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>)
      outs(%S : memref<?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (j)>]
      accumulate add output reduce {aggregate = 2 : i32}
      when {
      ^bb0(%i: index, %j: index, %l: f32):
        %zero = arith.constant 0.0 : f32
        %keep = arith.cmpf oge, %l, %zero : f32
        tile.yield %keep : i1
      }
      inner {
      ^bb0(%a: f32, %b: f32, %l: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}
