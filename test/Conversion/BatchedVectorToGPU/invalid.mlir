// RUN: kge-opt %s -split-input-file -verify-diagnostics -bvec-fuse -convert-bvec-to-gpu=negative=t

// The GPU lowering refuses what it cannot implement, with a diagnostic on
// the function.

// expected-error@+1 {{GPU lowering supports f32, f16 and bf16 tables; table 'E' has 'f64'}}
bvec.func @f64_table(%E: !bvec.table<?x?xf64>, %h: !bvec.indices<?xi64>,
                     %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf64>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf64>
  %b = bvec.gather_vec %E[%t] : !bvec.table<?x?xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf64>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x?xf64>, !bvec.vec<?x?xf64> -> !bvec.scalar<?xf64>
  bvec.return %s : !bvec.scalar<?xf64>
}

// -----

// Half-precision tables are read in half precision, but kernels compute in
// f32: their gathers must widen.
bvec.func @half_compute(%E: !bvec.table<?x?xbf16>, %h: !bvec.indices<?xi64>,
                        %t: !bvec.indices<?xi64>) -> (v: !bvec.vec<?x?xbf16>) {
  // expected-error@+1 {{GPU lowering computes in f32, got '!bvec.vec<?x?xbf16>' (gathers widen half-precision tables to f32)}}
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xbf16>
  bvec.return %a : !bvec.vec<?x?xbf16>
}

// -----

// expected-error@+1 {{negative mode: 't' is not an index array of the function}}
bvec.func @no_array(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>,
                    %u: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %b = bvec.gather_vec %E[%u] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error@+1 {{negative mode: cannot reorder edges by the corrupted index array 't'; choose another reorder key}}
bvec.func @sorted_by_corrupted(%E: !bvec.table<?x?xf32>, %P: !bvec.table<?x?x?xf32>,
                               %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%t] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %p = bvec.vec_mul_mat %a, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %s = bvec.norm %p, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error@+3 {{GPU lowering supports item sizes up to 16777216, got '!bvec.vec<?x33554432xf32>'}}
bvec.func @huge(%E: !bvec.table<?x33554432xf32>, %t: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%t] : !bvec.table<?x33554432xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x33554432xf32>
  %s = bvec.norm %v, p = 2 : !bvec.vec<?x33554432xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// expected-error@+1 {{negative mode: per-edge input 'd' has one value per positive edge, not per scored edge; score the corrupted edges as a batch of their own}}
bvec.func @per_edge_input_negative(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>,
                                   %t: !bvec.indices<?xi64>, %d: !bvec.scalar<?xf32>)
    -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %b = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %a, %b : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %w = bvec.mul %s, %d : !bvec.scalar<?xf32>
  bvec.return %w : !bvec.scalar<?xf32>
}
