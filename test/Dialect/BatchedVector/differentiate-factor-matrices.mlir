// RUN: kge-opt %s -split-input-file -bvec-differentiate=factor-matrices | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-differentiate="factor-matrices wrt=E" | FileCheck %s --check-prefix=WRT

// TransR: the matrix's gradient is the outer product of the edge's vector
// and the projection's gradient, returned as its two factors.
// CHECK-LABEL: bvec.func @transr_grad(
// CHECK-SAME: -> (d_E_h: !bvec.vec<?x8xf32>, d_Pm_r_u0: !bvec.vec<?x8xf32>, d_Pm_r_v0: !bvec.vec<?x4xf32>)
// CHECK: %[[E:.*]] = bvec.gather_vec %E[%h]
// CHECK: %[[DY:.*]] = bvec.scal_mul_vec
// CHECK-NOT: bvec.vec_outer_vec
// CHECK: bvec.return %{{.*}}, %[[E]], %[[DY]] :
// Without the matrix among the differentiated tables nothing changes.
// WRT-LABEL: bvec.func @transr_grad(
// WRT-SAME: -> (d_E_h: !bvec.vec<?x8xf32>)
bvec.func @transr(%E: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x4xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %y = bvec.vec_mul_mat %e, %p : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %y, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// Three uses of the matrix Pm[r]: three terms. A matrix subtracted (Pm[s]):
// its left factor negated.
// CHECK-LABEL: bvec.func @three_uses_grad(
// CHECK-SAME: d_Pm_r_u0: !bvec.vec<?x8xf32>, d_Pm_r_v0: !bvec.vec<?x4xf32>, d_Pm_r_u1: !bvec.vec<?x8xf32>, d_Pm_r_v1: !bvec.vec<?x4xf32>, d_Pm_r_u2: !bvec.vec<?x8xf32>, d_Pm_r_v2: !bvec.vec<?x4xf32>, d_Pm_s_u0: !bvec.vec<?x8xf32>, d_Pm_s_v0: !bvec.vec<?x4xf32>)
// CHECK: %[[E:.*]] = bvec.gather_vec %E[%h]
// CHECK: %[[NEG:.*]] = bvec.neg %[[E]] : !bvec.vec<?x8xf32>
// CHECK: bvec.return {{.*}}, %[[NEG]], %{{.*}} :
// CHECK-NOT: bvec.vec_outer_vec
bvec.func @three_uses(%E: !bvec.table<?x8xf32>, %F: !bvec.table<?x4xf32>, %Pm: !bvec.table<?x8x4xf32>,
                    %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                    %s: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %f = bvec.gather_vec %F[%t] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %q = bvec.gather_mat %Pm[%s] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %y = bvec.vec_mul_mat %e, %p : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %a = bvec.vec_mul_vec %y, %f : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %z = bvec.mat_mul_vec %p, %f : !bvec.mat<?x8x4xf32>, !bvec.vec<?x4xf32> -> !bvec.vec<?x8xf32>
  %b = bvec.reduce sum %z : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  %d = bvec.sub %p, %q : !bvec.mat<?x8x4xf32>
  %w = bvec.vec_mul_mat %e, %d : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %c = bvec.reduce sum %w : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %ab = bvec.add %a, %b : !bvec.scalar<?xf32>
  %score = bvec.add %ab, %c : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Rows of a matrix that reach no result: one term of zero factors.
// CHECK-LABEL: bvec.func @unused_grad(
// CHECK-SAME: -> (d_E_h: !bvec.vec<?x8xf32>, d_Pm_r_u0: !bvec.vec<?x8xf32>, d_Pm_r_v0: !bvec.vec<?x4xf32>)
// CHECK-DAG: %[[U:.*]] = bvec.constant 0.000000e+00 : !bvec.vec<?x8xf32>
// CHECK-DAG: %[[V:.*]] = bvec.constant 0.000000e+00 : !bvec.vec<?x4xf32>
// CHECK: bvec.return %{{.*}}, %[[U]], %[[V]] :
bvec.func @unused(%E: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x4xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %n = bvec.norm %e, p = 1 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}
