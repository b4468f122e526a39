// RUN: kge-opt %s -convert-bvec-to-scf -split-input-file | FileCheck %s --enable-var-scope

// The CPU lowering: destination-passing functions over memrefs, one loop
// nest per operation, temporaries freed before returning.

// CHECK-LABEL: func.func @dot(
// CHECK-SAME: %[[E:.*]]: memref<?x4xf32> {kge.param = "E"}, %[[H:.*]]: memref<?xi64> {kge.param = "h"},
// CHECK-SAME: %[[T:.*]]: memref<?xi64> {kge.param = "t"}, %[[OUT:.*]]: memref<?xf32> {kge.result = "s"})
// CHECK-SAME: attributes {llvm.emit_c_interface}
// Gather: one row per edge, the index loaded and cast.
// CHECK: %[[A:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: scf.for %[[B:.*]] =
// CHECK:   %[[IDX:.*]] = memref.load %[[H]][%[[B]]] : memref<?xi64>
// CHECK:   %[[ROW:.*]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK:   scf.for %[[K:.*]] =
// CHECK:     %[[X:.*]] = memref.load %[[E]][%[[ROW]], %[[K]]]
// CHECK:     memref.store %[[X]], %[[A]][%[[B]], %[[K]]]
// CHECK: %[[C:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// Inner product: a reduction loop carrying the sum.
// CHECK: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK:   scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:     arith.mulf
// CHECK:     arith.addf %[[ACC]]
// CHECK: memref.copy %[[S]], %[[OUT]]
// CHECK-DAG: memref.dealloc %[[A]]
// CHECK-DAG: memref.dealloc %[[C]]
// CHECK-DAG: memref.dealloc %[[S]]
// CHECK: return
bvec.func @dot(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %b = bvec.gather_vec %E[%t] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// Norms: |x| summed for p = 1, x*x summed and square-rooted for p = 2.
// CHECK-LABEL: func.func @norms(
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     math.absf
// CHECK:     arith.addf
// CHECK: scf.for
// CHECK:   %[[SQ:.*]] = scf.for
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK:   math.sqrt %[[SQ]]
bvec.func @norms(%E: !bvec.table<?x?xf64>, %h: !bvec.indices<?xi32>) -> (a: !bvec.scalar<?xf64>, b: !bvec.scalar<?xf64>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x?xf64>, !bvec.indices<?xi32> -> !bvec.vec<?x?xf64>
  %a = bvec.norm %v, p = 1 : !bvec.vec<?x?xf64> -> !bvec.scalar<?xf64>
  %b = bvec.norm %v, p = 2 : !bvec.vec<?x?xf64> -> !bvec.scalar<?xf64>
  bvec.return %a, %b : !bvec.scalar<?xf64>, !bvec.scalar<?xf64>
}

// -----

// vec_mul_mat reduces over the matrix rows: out[b][j] += v[b][k] * m[b][k][j].
// CHECK-LABEL: func.func @vec_mul_mat(
// CHECK: %[[M:.*]] = memref.alloc(%{{.*}}) : memref<?x4x3xf32>
// CHECK: %[[V:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x3xf32>
// CHECK: scf.for %[[B:.*]] =
// CHECK:   scf.for %[[J:.*]] =
// CHECK:     %[[SUM:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args
// CHECK:       memref.load %[[V]][%[[B]], %[[K]]]
// CHECK:       memref.load %[[M]][%[[B]], %[[K]], %[[J]]]
// CHECK:     memref.store %[[SUM]], %[[OUT]][%[[B]], %[[J]]]
bvec.func @vec_mul_mat(%E: !bvec.table<?x4xf32>, %P: !bvec.table<?x4x3xf32>, %h: !bvec.indices<?xi64>) -> (v: !bvec.vec<?x3xf32>) {
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x4x3xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x3xf32>
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %r = bvec.vec_mul_mat %v, %m : !bvec.vec<?x4xf32>, !bvec.mat<?x4x3xf32> -> !bvec.vec<?x3xf32>
  bvec.return %r : !bvec.vec<?x3xf32>
}

// -----

// Constants take the batch size from the first output; slices offset the
// load; outer products write a matrix per edge; sigmoid is 1 / (1 + e^-x).
// CHECK-LABEL: func.func @misc(
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x2x4xf32> {kge.result = "o"}
// CHECK: %[[BATCH:.*]] = memref.dim %[[OUT]], %{{.*}} : memref<?x2x4xf32>
// CHECK: %[[C:.*]] = memref.alloc(%[[BATCH]]) : memref<?x4xf32>
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: arith.addi %{{.*}}, %c2
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK: arith.mulf
bvec.func @misc(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (o: !bvec.mat<?x2x4xf32>) {
  %c = bvec.constant 0.5 : !bvec.vec<?x4xf32>
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %s = bvec.slice %v[2] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  %sig = bvec.sigmoid %c : !bvec.vec<?x4xf32>
  %o = bvec.vec_outer_vec %s, %sig : !bvec.vec<?x2xf32>, !bvec.vec<?x4xf32> -> !bvec.mat<?x2x4xf32>
  bvec.return %o : !bvec.mat<?x2x4xf32>
}

// -----

// Reductions start from their identity; mean divides by the length.
// CHECK-LABEL: func.func @reductions(
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.constant 0x7F800000 : f32
// CHECK: arith.minimumf
// CHECK: arith.sitofp
// CHECK: arith.divf
bvec.func @reductions(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (a: !bvec.scalar<?xf32>, b: !bvec.scalar<?xf32>, c: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %a = bvec.reduce max %v : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %b = bvec.reduce min %v : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %c = bvec.reduce mean %v : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %a, %b, %c : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}
