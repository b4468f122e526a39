// RUN: kge-opt %s -split-input-file -bvec-differentiate=factor-matrices -verify-diagnostics

// An elementwise product of matrices has a gradient that is no sum of
// outer products of vectors.
// expected-error @+1 {{'bvec.func' op cannot be differentiated with factor-matrices: the gradient of the rows of 'Pm' gathered through 'r' is not a sum of outer products of vectors}}
bvec.func @squared(%E: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x4xf32>,
                   %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %q = bvec.mul %p, %p : !bvec.mat<?x8x4xf32>
  %y = bvec.vec_mul_mat %e, %q : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %s = bvec.reduce sum %y : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// A factor's name taken by a parameter.
// expected-error @+1 {{'bvec.func' op cannot be differentiated: the gradient name 'd_Pm_r_u0' is taken by another parameter}}
bvec.func @taken(%E: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x4xf32>,
                 %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                 %d_Pm_r_u0: !bvec.scalar<?xf32>) -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %p = bvec.gather_mat %Pm[%r] : !bvec.table<?x8x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x4xf32>
  %y = bvec.vec_mul_mat %e, %p : !bvec.vec<?x8xf32>, !bvec.mat<?x8x4xf32> -> !bvec.vec<?x4xf32>
  %s = bvec.reduce sum %y : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %w = bvec.mul %s, %d_Pm_r_u0 : !bvec.scalar<?xf32>
  bvec.return %w : !bvec.scalar<?xf32>
}
