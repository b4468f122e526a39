// RUN: kge-opt %s -canonicalize -split-input-file | FileCheck %s

// Canonicalizations and folds of the bvec dialect, one per chunk.

// A repeated gather of the same rows is the first gather; x - x is zero
// and adding zero is the identity, so the whole expression is the relation.
// CHECK-LABEL: bvec.func @repeated_gather_sub_self
// CHECK-NEXT: %[[R:.*]] = bvec.gather_vec %R[%r]
// CHECK-NEXT: %[[N:.*]] = bvec.norm %[[R]], p = 2
// CHECK-NEXT: bvec.return %[[N]]
bvec.func @repeated_gather_sub_self(%E: !bvec.table<?x8xf32>, %R: !bvec.table<?x8xf32>,
                                    %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %b = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %zero = bvec.sub %a, %b : !bvec.vec<?x8xf32>
  %x = bvec.add %zero, %rel : !bvec.vec<?x8xf32>
  %n = bvec.norm %x, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// Gathers of different rows or tables stay.
// CHECK-LABEL: bvec.func @distinct_gathers
// CHECK-COUNT-3: bvec.gather_vec
bvec.func @distinct_gathers(%E: !bvec.table<?x8xf32>, %F: !bvec.table<?x8xf32>,
                            %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %b = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %c = bvec.gather_vec %F[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %x = bvec.sub %a, %b : !bvec.vec<?x8xf32>
  %y = bvec.sub %x, %c : !bvec.vec<?x8xf32>
  %n = bvec.norm %y, p = 1 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// A repeated gather of the same matrices is the first gather.
// CHECK-LABEL: bvec.func @repeated_gather_mat
// CHECK-COUNT-1: bvec.gather_mat
// CHECK-NOT: bvec.gather_mat
bvec.func @repeated_gather_mat(%P: !bvec.table<?x4x4xf32>, %r: !bvec.indices<?xi64>)
    -> (m: !bvec.mat<?x4x4xf32>) {
  %a = bvec.gather_mat %P[%r] : !bvec.table<?x4x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf32>
  %b = bvec.gather_mat %P[%r] : !bvec.table<?x4x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf32>
  %c = bvec.add %a, %b : !bvec.mat<?x4x4xf32>
  bvec.return %c : !bvec.mat<?x4x4xf32>
}

// -----

// Scaling by one is the identity, by zero gives zero.
// CHECK-LABEL: bvec.func @scale_by_one_and_zero
// CHECK-DAG: %[[ZERO:.*]] = bvec.constant 0.000000e+00 : !bvec.vec<?x8xf32>
// CHECK-DAG: %[[V:.*]] = bvec.gather_vec
// CHECK: bvec.return %[[V]], %[[ZERO]], %[[V]]
bvec.func @scale_by_one_and_zero(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>)
    -> (a: !bvec.vec<?x8xf32>, b: !bvec.vec<?x8xf32>, c: !bvec.vec<?x8xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %one = bvec.constant 1.0 : !bvec.scalar<?xf32>
  %zero = bvec.constant 0.0 : !bvec.scalar<?xf32>
  %a = bvec.scal_mul_vec %one, %v : !bvec.scalar<?xf32>, !bvec.vec<?x8xf32> -> !bvec.vec<?x8xf32>
  %b = bvec.scal_mul_vec %zero, %v : !bvec.scalar<?xf32>, !bvec.vec<?x8xf32> -> !bvec.vec<?x8xf32>
  %ones = bvec.constant 1.0 : !bvec.vec<?x8xf32>
  %c = bvec.mul %v, %ones : !bvec.vec<?x8xf32>
  bvec.return %a, %b, %c : !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>
}

// -----

// Multiplying by zero gives zero and dividing by one is the identity.
// CHECK-LABEL: bvec.func @mul_zero_div_one
// CHECK-DAG: %[[ZERO:.*]] = bvec.constant 0.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: %[[S:.*]] = bvec.norm
// CHECK: bvec.return %[[ZERO]], %[[S]]
bvec.func @mul_zero_div_one(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>)
    -> (a: !bvec.scalar<?xf32>, b: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.norm %v, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  %zero = bvec.constant 0.0 : !bvec.scalar<?xf32>
  %one = bvec.constant 1.0 : !bvec.scalar<?xf32>
  %a = bvec.mul %zero, %s : !bvec.scalar<?xf32>
  %b = bvec.div %s, %one : !bvec.scalar<?xf32>
  bvec.return %a, %b : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}

// -----

// Negations: -(-x) = x, x + (-y) = x - y, x - (-y) = x + y, 0 - y = -y.
// CHECK-LABEL: bvec.func @negations
// CHECK-DAG: %[[X:.*]] = bvec.gather_vec %E[%h]
// CHECK-DAG: %[[Y:.*]] = bvec.gather_vec %E[%t]
// CHECK-DAG: %[[SUB:.*]] = bvec.sub %[[X]], %[[Y]]
// CHECK-DAG: %[[ADD:.*]] = bvec.add %[[X]], %[[Y]]
// CHECK-DAG: %[[NEG:.*]] = bvec.neg %[[Y]]
// CHECK: bvec.return %[[X]], %[[SUB]], %[[ADD]], %[[NEG]]
bvec.func @negations(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (a: !bvec.vec<?x8xf32>, b: !bvec.vec<?x8xf32>, c: !bvec.vec<?x8xf32>, d: !bvec.vec<?x8xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %nx = bvec.neg %x : !bvec.vec<?x8xf32>
  %nnx = bvec.neg %nx : !bvec.vec<?x8xf32>
  %ny = bvec.neg %y : !bvec.vec<?x8xf32>
  %b = bvec.add %x, %ny : !bvec.vec<?x8xf32>
  %c = bvec.sub %x, %ny : !bvec.vec<?x8xf32>
  %zero = bvec.constant 0.0 : !bvec.vec<?x8xf32>
  %d = bvec.sub %zero, %y : !bvec.vec<?x8xf32>
  bvec.return %nnx, %b, %c, %d : !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>
}

// -----

// Idempotent operations: |(|x|)| = |x|, max(x, x) = x, min(x, x) = x.
// CHECK-LABEL: bvec.func @idempotent
// CHECK: %[[X:.*]] = bvec.gather_vec
// CHECK-NEXT: %[[A:.*]] = bvec.abs %[[X]]
// CHECK-NEXT: bvec.return %[[A]], %[[X]], %[[X]]
bvec.func @idempotent(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>)
    -> (a: !bvec.vec<?x8xf32>, b: !bvec.vec<?x8xf32>, c: !bvec.vec<?x8xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %a1 = bvec.abs %x : !bvec.vec<?x8xf32>
  %a2 = bvec.abs %a1 : !bvec.vec<?x8xf32>
  %b = bvec.max %x, %x : !bvec.vec<?x8xf32>
  %c = bvec.min %x, %x : !bvec.vec<?x8xf32>
  bvec.return %a2, %b, %c : !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>
}

// -----

// Constants fold through arithmetic, math, norms, reductions and products.
// CHECK-LABEL: bvec.func @constant_folding
// CHECK-DAG: bvec.constant 5.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 1.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 8.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 6.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 1.200000e+01 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 1.500000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 2.400000e+01 : !bvec.scalar<?xf32>
// CHECK-DAG: bvec.constant 3.000000e+00 : !bvec.vec<?x2xf32>
// CHECK-NOT: bvec.add
// CHECK-NOT: bvec.exp
// CHECK-NOT: bvec.norm
// CHECK-NOT: bvec.reduce
// CHECK-NOT: bvec.vec_mul_vec
// CHECK-NOT: bvec.slice
// CHECK-NOT: bvec.scal_mul_vec
bvec.func @constant_folding(%E: !bvec.table<?x4xf32>)
    -> (a: !bvec.scalar<?xf32>, b: !bvec.scalar<?xf32>, c: !bvec.scalar<?xf32>, d: !bvec.scalar<?xf32>,
        e: !bvec.scalar<?xf32>, f: !bvec.scalar<?xf32>, g: !bvec.scalar<?xf32>, h: !bvec.vec<?x2xf32>) {
  %two = bvec.constant 2.0 : !bvec.scalar<?xf32>
  %three = bvec.constant 3.0 : !bvec.scalar<?xf32>
  %zero = bvec.constant 0.0 : !bvec.scalar<?xf32>
  %a = bvec.add %two, %three : !bvec.scalar<?xf32>
  %b = bvec.exp %zero : !bvec.scalar<?xf32>
  %v = bvec.constant -2.0 : !bvec.vec<?x4xf32>
  %c = bvec.norm %v, p = 1 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %w = bvec.constant 3.0 : !bvec.vec<?x4xf32>
  %d = bvec.norm %w, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %e = bvec.reduce sum %w : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %x = bvec.constant 1.5 : !bvec.vec<?x4xf32>
  %f = bvec.reduce mean %x : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %g = bvec.vec_mul_vec %v, %w : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %gn = bvec.neg %g : !bvec.scalar<?xf32>
  %h = bvec.slice %w[2] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  %one = bvec.constant 1.0 : !bvec.vec<?x2xf32>
  %hs = bvec.scal_mul_vec %three, %one : !bvec.scalar<?xf32>, !bvec.vec<?x2xf32> -> !bvec.vec<?x2xf32>
  bvec.return %a, %b, %c, %d, %e, %f, %gn, %hs : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.scalar<?xf32>, !bvec.vec<?x2xf32>
}

// -----

// An inner product with zero is zero; a full slice is the identity.
// CHECK-LABEL: bvec.func @zero_product_full_slice
// CHECK-DAG: %[[ZERO:.*]] = bvec.constant 0.000000e+00 : !bvec.scalar<?xf32>
// CHECK-DAG: %[[V:.*]] = bvec.gather_vec
// CHECK: bvec.return %[[ZERO]], %[[V]]
bvec.func @zero_product_full_slice(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>, v: !bvec.vec<?x4xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %zero = bvec.constant 0.0 : !bvec.vec<?x4xf32>
  %s = bvec.vec_mul_vec %v, %zero : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  %all = bvec.slice %v[0] : !bvec.vec<?x4xf32> -> !bvec.vec<?x4xf32>
  bvec.return %s, %all : !bvec.scalar<?xf32>, !bvec.vec<?x4xf32>
}

// -----

// x - x stays when its length is dynamic: no constant can hold the zero.
// CHECK-LABEL: bvec.func @dynamic_length_sub_self
// CHECK: bvec.sub
bvec.func @dynamic_length_sub_self(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>)
    -> (v: !bvec.vec<?x?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %z = bvec.sub %v, %v : !bvec.vec<?x?xf32>
  bvec.return %z : !bvec.vec<?x?xf32>
}

// -----

// Unused operations disappear.
// CHECK-LABEL: bvec.func @dead_code
// CHECK-NOT: bvec.exp
// CHECK-NOT: bvec.gather_mat
bvec.func @dead_code(%E: !bvec.table<?x4xf32>, %P: !bvec.table<?x4x4xf32>, %h: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x4x4xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x4x4xf32>
  %e = bvec.exp %v : !bvec.vec<?x4xf32>
  %s = bvec.norm %v, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
