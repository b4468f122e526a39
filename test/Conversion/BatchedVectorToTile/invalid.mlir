// RUN: kge-opt %s --split-input-file --convert-bvec-to-tile="shared-negatives=t" -verify-diagnostics

// Score functions that are not one reduction over the embedding, each
// refused with the reason.

// expected-error @below {{has no index array 't' to take the shared negatives from}}
bvec.func @no_array(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %u: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %b = bvec.gather_vec %E[%u] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error @below {{has no index array 't' to take the shared negatives from}}
bvec.func @not_indices(%t: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %t[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.norm %a, p = 1 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error @below {{has 2 results: scoring against shared negatives takes one score}}
bvec.func @two_results(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (a: !bvec.scalar<?xf32>, b: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %x, %y : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s, %s : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}

// -----

bvec.func @matrix(%E: !bvec.table<?x?xf32>, %P: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  // expected-error @below {{'bvec.vec_mul_mat' op is a matrix product: scoring against shared negatives takes elementwise vector expressions reduced once over the embedding}}
  %p = bvec.vec_mul_mat %x, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %p, %y : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// A reduction feeding a vector (TransH's projection) is two passes.
bvec.func @projection(%E: !bvec.table<?x?xf32>, %W: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>,
                      %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %w = bvec.gather_vec %W[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %d = bvec.vec_mul_vec %w, %y : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  // expected-error @below {{'bvec.scal_mul_vec' op scales by a per-edge scalar: scoring against shared negatives takes one reduction over the embedding}}
  %p = bvec.scal_mul_vec %d, %w : !bvec.scalar<?xf32>, !bvec.vec<?x?xf32> -> !bvec.vec<?x?xf32>
  %q = bvec.sub %x, %p : !bvec.vec<?x?xf32>
  %s = bvec.norm %q, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

bvec.func @mean(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %d = bvec.mul %x, %y : !bvec.vec<?x?xf32>
  // expected-error @below {{'bvec.reduce' op is a mean: scoring against shared negatives takes sums, maxima, minima and norms over the embedding}}
  %s = bvec.reduce mean %d : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

bvec.func @slice(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  // expected-error @below {{'bvec.slice' op slices vectors: scoring against shared negatives reads whole rows (store the parts in separate tables)}}
  %a = bvec.slice %x[0] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %b = bvec.slice %y[4] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// Two reductions multiplied: not one accumulated value per pair.
// expected-error @below {{combines 2 reductions over the embedding other than as a sum of sums scaled by constants: scoring against shared negatives accumulates one value per pair}}
bvec.func @product_of_sums(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %a = bvec.vec_mul_vec %x, %y : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %b = bvec.norm %y, p = 1 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %s = bvec.mul %a, %b : !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error @below {{does not read rows through 't': its score does not depend on the negatives}}
bvec.func @no_negatives(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.norm %x, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error @below {{reads rows only through the negatives: its score does not depend on the edges}}
bvec.func @only_negatives(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.norm %y, p = 1 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error @below {{computes a score that reads no embedding: nothing to score against the negatives}}
bvec.func @constant(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
  bvec.return %c : !bvec.scalar<?xf32>
}
