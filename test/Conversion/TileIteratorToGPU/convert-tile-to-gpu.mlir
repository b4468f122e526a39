// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="block-m=64 block-n=64 block-k=16 thread-m=4 thread-n=4" \
// RUN:   --canonicalize | FileCheck %s
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s --check-prefix=AUTO
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="block-m=32 block-n=32 block-k=8 thread-m=2 thread-n=2" \
// RUN:   | FileCheck %s --check-prefix=SMALL
// RUN: not kge-opt %s --split-input-file --convert-tile-to-gpu="block-m=60 thread-m=8" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SHAPE

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// GEMM: the function becomes a module with its bundle description and one
// kernel; the staged tiles are 16-byte aligned shared memory read as
// vectors, the accumulation may contract into FMAs.
// CHECK-LABEL: gpu.module @gemm_kernels
// CHECK-SAME: kge.launch_plan = [{args = [{buffer = "param:A", kind = "memref", shape = ["M", "K"]}, {buffer = "param:B", kind = "memref", shape = ["K", "N"]}, {buffer = "param:C", kind = "memref", shape = ["M", "N"]}], block = ["256", "1", "1"], function = "gemm", grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"]
// CHECK-SAME: kge.mode = {kind = "positive"}
// CHECK-SAME: kge.signature = {name = "gemm", params = [{dtype = "f32", name = "A", role = "table", shape = ["M", "K"]}
// CHECK: gpu.func @gemm(%[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-SAME: workgroup(%[[TA:.*]] : memref<16x64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[TB:.*]] : memref<16x64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME: kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// The first step's elements are read before the k loop; each step stores
// the elements it carries, then reads the next step's before computing.
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: memref.load %[[A]]
// CHECK: scf.for %[[K0:.*]] = %c0 to %{{.*}} step %c16 iter_args(%{{.*}} = %cst{{.*}}, %[[FIRST:[^ ]*]] = %{{.*}}#0,
// CHECK: gpu.barrier
// CHECK: memref.store %[[FIRST]], %[[TA]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[A]]
// CHECK: scf.for %[[KK:.*]] = %c0 to %{{.*}} step %c1 iter_args(
// CHECK: vector.load %[[TA]][%[[KK]], %{{.*}}] {alignment = 16 : i64} : memref<16x64xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.load %[[TB]][%[[KK]], %{{.*}}] {alignment = 16 : i64}
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: memref.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] : memref<?x?xf32>
// CHECK-NOT: func.func @gemm
// Without a shape, GAMUT's heuristic: a 128 x 128 kernel when its grid fills
// the 132 multiprocessors, a 64 x 64 one otherwise.
// AUTO-LABEL: gpu.module @gemm_kernels
// AUTO-SAME: block = ["256", "1", "1"], function = "gemm", grid = ["ceildiv(N, 128)", "min(ceildiv(M, 128), 65535)", "ceildiv(ceildiv(M, 128), 65535)"], kind = "kernel", module = "gemm_kernels", shared_bytes = "0", when = "ceildiv(N, 128) * ceildiv(M, 128) / 132"}
// AUTO-SAME: function = "gemm_small", grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"], kind = "kernel", module = "gemm_kernels", shared_bytes = "0", when = "1 - min(1, ceildiv(N, 128) * ceildiv(M, 128) / 132)"}
// AUTO: gpu.func @gemm({{.*}}) workgroup(%{{.*}} : memref<8x128xf32
// AUTO: gpu.func @gemm_small({{.*}}) workgroup(%{{.*}} : memref<16x64xf32
// Two-by-two sub-tiles are read one element at a time.
// SMALL-LABEL: gpu.module @gemm_kernels
// SMALL: workgroup(%{{.*}} : memref<8x32xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}
// SMALL-NOT: vector.load
// SMALL: gpu.return
// SHAPE: error: invalid tile shape: block 60x64x16, thread 8x4 (the thread tile must divide the block tile, at most 1024 threads, block-k at most the number of threads)
func.func @gemm(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
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
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>

// A join with aggregate max: a block-wide flag decides whether the block
// reduces at all; float max groups combine with one integer atomic on the
// bits: signed max for a non-negative value, unsigned min for a negative one
// (no compare-and-swap loop).
// CHECK-LABEL: gpu.module @join_max_kernels
// CHECK-SAME: kge.checks = [{bound = "C_d0", count = "M", param = "pz"}, {bound = "C_d1", count = "N", param = "rz"}]
// CHECK: gpu.func @join_max
// CHECK-SAME: %[[FLAG:[^ ]*]] : memref<1xi32, #gpu.address_space<workgroup>>
// CHECK: memref.store %c0_i32, %[[FLAG]][%c0]
// CHECK: gpu.barrier
// CHECK: memref.store %c1_i32, %[[FLAG]][%c0]
// CHECK: gpu.barrier
// CHECK: %[[F:.*]] = memref.load %[[FLAG]][%c0]
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[F]], %c0_i32
// CHECK: scf.if %[[ANY]] -> (f32, f32
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[NEG:.*]] = arith.cmpi slt, %[[BITS]], %c0_i32
// CHECK: %[[PTR:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: scf.if %[[NEG]] {
// CHECK: llvm.atomicrmw umin %[[PTR]], %[[BITS]] monotonic
// CHECK: } else {
// CHECK: llvm.atomicrmw max %[[PTR]], %[[BITS]] monotonic
// CHECK-NOT: maxnumf
func.func @join_max(%P: memref<?x?xf32> {kge.param = "P"}, %R: memref<?x?xf32> {kge.param = "R"},
                    %pz: memref<?xi32> {kge.param = "pz"}, %rz: memref<?xi32> {kge.param = "rz"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%P, %R, %pz, %rz : memref<?x?xf32>, memref<?x?xf32>, memref<?xi32>, memref<?xi32>)
      keys(%pz, %rz : memref<?xi32>, memref<?xi32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj, #i, #j] accumulate add output aggregate {aggregate = 2 : i32}
      when {
      ^bb0(%i: index, %j: index, %a: i32, %b: i32):
        %same = arith.cmpi eq, %a, %b : i32
        tile.yield %same : i1
      }
      inner {
      ^bb0(%p: f32, %r: f32, %a: i32, %b: i32):
        %v = arith.mulf %p, %r : f32
        tile.yield %v : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Select: a first kernel clears the counter; the block counts its pairs in
// shared memory and reserves their slots with one global atomic.
// CHECK-LABEL: gpu.module @select_kernels
// CHECK-SAME: function = "select_clear", grid = ["1", "1", "1"]
// CHECK-SAME: function = "select", grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"]
// CHECK: gpu.func @select(%{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?xf32>, %[[COUNT:.*]]: memref<1xi64>)
// CHECK-SAME: %[[BLOCK:[^ ]*]] : memref<1xi32, #gpu.address_space<workgroup>>, %[[BASE:[^ ]*]] : memref<1xi64, #gpu.address_space<workgroup>>
// CHECK: %[[OFFSET:.*]] = memref.atomic_rmw addi %{{.*}}, %[[BLOCK]][%c0] : (i32, memref<1xi32, #gpu.address_space<workgroup>>) -> i32
// CHECK: gpu.barrier
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNT]][%c0] : (i64, memref<1xi64>) -> i64
// CHECK: gpu.func @select_clear(%[[C:.*]]: memref<1xi64>) kernel
// CHECK: memref.store %c0_i64, %[[C]][%c0]
func.func @select(%P: memref<?x?xf32> {kge.param = "P"}, %R: memref<?x?xf32> {kge.param = "R"},
                  %rows: memref<?xi32> {kge.param = "rows"}, %cols: memref<?xi32> {kge.param = "cols"},
                  %vals: memref<?xf32> {kge.param = "vals"}, %count: memref<1xi64> {kge.param = "count"}) {
  tile.task ins(%P, %R : memref<?x?xf32>, memref<?x?xf32>)
      outs(%rows, %cols, %vals, %count : memref<?xi32>, memref<?xi32>, memref<?xf32>, memref<1xi64>)
      maps [#ik, #kj] accumulate add output select
      inner {
      ^bb0(%p: f32, %r: f32):
        %v = arith.mulf %p, %r : f32
        tile.yield %v : f32
      }
      predicate {
      ^bb0(%v: f32, %acc: f32, %i: index, %j: index):
        %t = arith.constant 10.0 : f32
        %above = arith.cmpf ogt, %v, %t : f32
        tile.yield %above : i1
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Distinct: the plan clears the counter and the hash set (twice the
// capacity's slots and a flag word); a kept value probes the set (slots read
// whole by relaxed atomic loads), claims an empty slot by compare-and-swap,
// and the thread that claimed it takes an output slot from the counter.
// CHECK-LABEL: gpu.module @distinct_kernels
// CHECK-SAME: function = "distinct_clear"
// CHECK-SAME: {buffer = "scratch:set", kind = "memset"}
// CHECK-SAME: {buffer = "scratch:set", kind = "memref", shape = ["2 * values_d0 + 1"]}
// CHECK-SAME: kge.scratch = [{count = "2 * values_d0 + 1", dtype = "i64", name = "set"}]
// CHECK: gpu.func @distinct(%{{.*}}: memref<?x?xf32>, %{{.*}}: memref<?x?xf32>, %[[VALUES:.*]]: memref<?xf32>, %[[COUNT:.*]]: memref<1xi64>, %[[SET:.*]]: memref<?xi64>)
// CHECK: memref.extract_aligned_pointer_as_index %[[SET]]
// CHECK: scf.while
// CHECK: llvm.load %{{.*}} atomic monotonic {alignment = 8 : i64} : !llvm.ptr -> i64
// CHECK: memref.generic_atomic_rmw %[[SET]]
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNT]][%c0] : (i64, memref<1xi64>) -> i64
// CHECK: memref.store %{{.*}}, %[[VALUES]]
// CHECK-NOT: memref.atomic_rmw assign
// CHECK: gpu.func @distinct_clear
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

// Distinct of 64-bit integers: every bit pattern is a value, so the one that
// encodes as an empty slot (0) sets the set's last word instead.
// CHECK-LABEL: gpu.module @distinct_i64_kernels
// CHECK: gpu.func @distinct_i64(
// CHECK-SAME: %{{.*}}: memref<1xi64>, %[[SET:[^:]*]]: memref<?xi64>) workgroup
// CHECK: %[[DIM:.*]] = memref.dim %[[SET]]
// CHECK: %[[FLAG:.*]] = arith.subi %[[DIM]], %c1
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[SET]][%[[FLAG]]]
// CHECK: scf.while
func.func @distinct_i64(%A: memref<?x?xi64> {kge.param = "A"}, %B: memref<?x?xi64> {kge.param = "B"},
                        %v: memref<?xi64> {kge.param = "values"}, %n: memref<1xi64> {kge.param = "count"}) {
  tile.task ins(%A, %B : memref<?x?xi64>, memref<?x?xi64>)
      outs(%v, %n : memref<?xi64>, memref<1xi64>)
      maps [#ik, #kj] accumulate max output distinct
      inner {
      ^bb0(%a: i64, %b: i64):
        %p = arith.addi %a, %b : i64
        tile.yield %p : i64
      }
  return
}
