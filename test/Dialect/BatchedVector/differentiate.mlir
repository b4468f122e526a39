// RUN: kge-opt %s -split-input-file -bvec-differentiate | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-differentiate="wrt=E" | FileCheck %s --check-prefix=WRT
// RUN: kge-opt %s -bvec-differentiate="functions=transr" | FileCheck %s --check-prefix=ONE

// bvec-differentiate adds @f_grad: f's arguments and one per-edge seed per
// result in, the row-sparse gradient of every (table, index array) pair
// out, with the forward values the gradient reads recomputed.

// TransE: d/dx |x| = x / |x| (floored at 1e-20), through add and sub.
// CHECK-LABEL: bvec.func @transe_grad(
// CHECK-SAME: %d_score: !bvec.scalar<?xf32>)
// CHECK-SAME: -> (d_E_h: !bvec.vec<?x16xf32>, d_E_t: !bvec.vec<?x16xf32>, d_R_r: !bvec.vec<?x16xf32>)
// CHECK: %[[D:.*]] = bvec.sub
// CHECK: %[[S:.*]] = bvec.add %[[D]]
// CHECK: %[[N:.*]] = bvec.norm %[[S]], p = 2
// CHECK: %[[FLOOR:.*]] = bvec.constant 9.99999968E-21 : !bvec.scalar<?xf32>
// CHECK: %[[M:.*]] = bvec.max %[[N]], %[[FLOOR]]
// CHECK: %[[W:.*]] = bvec.div %d_score, %[[M]]
// CHECK: %[[G:.*]] = bvec.scal_mul_vec %[[W]], %[[S]]
// CHECK: %[[NEG:.*]] = bvec.neg %[[G]]
// CHECK: bvec.return %[[G]], %[[NEG]], %[[G]]
// WRT-LABEL: bvec.func @transe_grad(
// WRT-SAME: -> (d_E_h: !bvec.vec<?x16xf32>, d_E_t: !bvec.vec<?x16xf32>)
bvec.func @transe(%E: !bvec.table<?x16xf32>, %R: !bvec.table<?x16xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %eh = bvec.gather_vec %E[%h] : !bvec.table<?x16xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x16xf32>
  %et = bvec.gather_vec %E[%t] : !bvec.table<?x16xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x16xf32>
  %er = bvec.gather_vec %R[%r] : !bvec.table<?x16xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x16xf32>
  %d = bvec.sub %eh, %et : !bvec.vec<?x16xf32>
  %s = bvec.add %d, %er : !bvec.vec<?x16xf32>
  %n = bvec.norm %s, p = 2 : !bvec.vec<?x16xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// TransR: the projection's gradients are the transposed product (to the
// vector) and an outer product (to the edge's matrix).
// CHECK-LABEL: bvec.func @transr_grad(
// CHECK-SAME: -> (d_E_h: !bvec.vec<?x8xf32>, d_Pm_r: !bvec.mat<?x8x4xf32>)
// The forward product is not recomputed: the sum's gradient does not read it.
// CHECK: %[[E:.*]] = bvec.gather_vec %E[%h]
// CHECK: %[[P:.*]] = bvec.gather_mat %Pm[%r]
// CHECK-NOT: bvec.vec_mul_mat
// CHECK: %[[DY:.*]] = bvec.scal_mul_vec
// CHECK-DAG: bvec.mat_mul_vec %[[P]], %[[DY]] : !bvec.mat<?x8x4xf32>, !bvec.vec<?x4xf32> -> !bvec.vec<?x8xf32>
// CHECK-DAG: bvec.vec_outer_vec %[[E]], %[[DY]] : !bvec.vec<?x8xf32>, !bvec.vec<?x4xf32> -> !bvec.mat<?x8x4xf32>
// ONE-NOT: bvec.func @{{other|transe|halves}}_grad
// ONE: bvec.func @transr_grad(
// ONE-NOT: bvec.func @{{other|transe|halves}}_grad
bvec.func @transr(%E: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x4xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %y = bvec.vec_mul_mat %e, %p : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %s = bvec.reduce sum %y : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
bvec.func @other(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.reduce max %e : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// A slice's gradient is padded back; rows that reach no result get zeros.
// CHECK-LABEL: bvec.func @halves_grad(
// CHECK-SAME: -> (d_E_h: !bvec.vec<?x8xf32>, d_E_t: !bvec.vec<?x8xf32>)
// CHECK: bvec.pad %{{.*}}[4] : !bvec.vec<?x4xf32> -> !bvec.vec<?x8xf32>
// CHECK: %[[ZERO:.*]] = bvec.constant 0.000000e+00 : !bvec.vec<?x8xf32>
// CHECK: bvec.return %{{.*}}, %[[ZERO]]
bvec.func @halves(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %unused = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %hi = bvec.slice %e[4] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %s = bvec.reduce sum %hi : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
