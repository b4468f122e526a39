// RUN: kge-opt %s -convert-bvec-to-scf -split-input-file -verify-diagnostics | FileCheck %s --enable-var-scope

// A constant of a dynamic length takes the length of the values it is
// combined with: the table dimension they come from.

// CHECK-LABEL: func.func @epsilon(
// CHECK-SAME: %[[E:[^ ]*]]: memref<?x?xf32> {kge.param = "E"}
// CHECK: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[D:.*]] = memref.dim %[[E]], %[[C1]] : memref<?x?xf32>
// CHECK: %[[EPS:.*]] = memref.alloc(%{{.*}}, %[[D]]) : memref<?x?xf32>
// CHECK: arith.constant 9.99999971E-10 : f32
// CHECK-NOT: kge.item_sizes
bvec.func @epsilon(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %eps = bvec.constant 1.0e-09 : !bvec.vec<?x?xf32>
  %y = bvec.add %x, %eps : !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %y, %y : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// Matrices: each dynamic dimension from its own table dimension.
// CHECK-LABEL: func.func @shifted_matrix(
// CHECK-SAME: %[[P:[^ ]*]]: memref<?x?x?xf32> {kge.param = "P"}
// CHECK-DAG: %[[R:.*]] = memref.dim %[[P]], %c1
// CHECK-DAG: %[[C:.*]] = memref.dim %[[P]], %c2
// CHECK: memref.alloc(%{{.*}}, %[[R]], %[[C]]) : memref<?x?x?xf32>
bvec.func @shifted_matrix(%E: !bvec.table<?x?xf32>, %P: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>)
    -> (v: !bvec.vec<?x?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %one = bvec.constant 1.0 : !bvec.mat<?x?x?xf32>
  %shifted = bvec.sub %m, %one : !bvec.mat<?x?x?xf32>
  %v = bvec.vec_mul_mat %x, %shifted : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  bvec.return %v : !bvec.vec<?x?xf32>
}

// -----

// A constant whose dynamic length nothing determines cannot be computed.
bvec.func @undetermined(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>) -> (v: !bvec.vec<?x?xf32>) {
  // expected-error @+1 {{'bvec.constant' op has a dynamic size in dimension 1 that no table dimension determines}}
  %c = bvec.constant 2.0 : !bvec.vec<?x?xf32>
  bvec.return %c : !bvec.vec<?x?xf32>
}
