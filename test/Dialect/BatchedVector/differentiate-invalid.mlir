// RUN: kge-opt %s -split-input-file -bvec-differentiate -verify-diagnostics
// RUN: not kge-opt %s -split-input-file -bvec-differentiate="wrt=Nope" 2>&1 | FileCheck %s --check-prefix=WRT
// RUN: not kge-opt %s -split-input-file -bvec-differentiate="functions=nope" 2>&1 | FileCheck %s --check-prefix=FUNC

// WRT: bvec-differentiate: no differentiated function has a table named 'Nope'
// FUNC: bvec-differentiate: no bvec.func named 'nope'

// expected-error @+1 {{'bvec.func' op cannot be differentiated: result 'v' is '!bvec.vec<?x4xf32>', not a batch of scalars (a gradient needs one seed per edge)}}
bvec.func @vector_result(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (v: !bvec.vec<?x4xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  bvec.return %e : !bvec.vec<?x4xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op cannot be differentiated: its gradient function name 'taken_grad' is taken}}
bvec.func @taken(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %e, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}
bvec.func @taken_grad(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %e, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op cannot be differentiated: the seed name 'd_s' is taken by an argument}}
bvec.func @seed_taken(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>, %d_s: !bvec.scalar<?xf32>) -> (s: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %e, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %w = bvec.mul %n, %d_s : !bvec.scalar<?xf32>
  bvec.return %w : !bvec.scalar<?xf32>
}

// -----

// expected-error @+1 {{'bvec.func' op cannot be differentiated: the gradient name 'd_E_h' is taken by another parameter}}
bvec.func @gradient_taken(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>, %d_E_h: !bvec.scalar<?xf32>) -> (s: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %e, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}
