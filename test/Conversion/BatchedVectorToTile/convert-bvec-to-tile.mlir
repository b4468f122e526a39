// RUN: kge-opt %s --split-input-file --convert-bvec-to-tile="shared-negatives=t" | FileCheck %s
// RUN: kge-opt %s --split-input-file -kge-lower-to-gpu="shared-negatives=t" \
// RUN:   | FileCheck %s --check-prefix=GPU
// RUN: kge-opt %s --split-input-file --convert-bvec-to-tile="shared-negatives=t" \
// RUN:   -kge-lower-to-cpu | FileCheck %s --check-prefix=CPU
// RUN: not kge-opt %s --split-input-file --convert-bvec-to-tile 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOARRAY

// NOARRAY: error: convert-bvec-to-tile needs shared-negatives=<index array>

// DistMult: rows of h and r along i, the negatives' rows along j, the
// product summed over the embedding. The function's arguments keep their
// names; the [B, N] scores are the result's.
// CHECK-DAG: #[[IK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[JK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @distmult(
// CHECK-SAME: %[[E:.*]]: memref<?x128xf32> {kge.param = "Eemb"}, %[[R:.*]]: memref<?x128xf32> {kge.param = "Remb"},
// CHECK-SAME: %[[H:.*]]: memref<?xi64> {kge.param = "h"}, %[[RI:.*]]: memref<?xi64> {kge.param = "r"}, %[[T:.*]]: memref<?xi64> {kge.param = "t"},
// CHECK-SAME: %[[S:.*]]: memref<?x?xf32> {kge.param = "score"})
// CHECK: tile.task ins(%[[E]], %[[R]], %[[E]] : memref<?x128xf32>, memref<?x128xf32>, memref<?x128xf32>) outs(%[[S]] : memref<?x?xf32>)
// CHECK-SAME: gathers(%[[H]], %[[RI]], %[[T]] : memref<?xi64>, memref<?xi64>, memref<?xi64>) maps [#[[IK]], #[[IK]], #[[JK]]]
// CHECK-SAME: accumulate add output dense {gathered = {{\[\[}}0, 0], [1, 0], [2, 0]]} inner {
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32):
// CHECK: %[[AB:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: %[[ABC:.*]] = arith.mulf %[[AB]], %[[C]] : f32
// CHECK: tile.yield %[[ABC]] : f32
// CHECK-NOT: project
// CHECK: return
// GPU-LABEL: gpu.module @distmult_kernels
// GPU-SAME: {bound = "Eemb_d0", count = "N", param = "t"}
// GPU-SAME: kge.signature = {name = "distmult", params = [{dtype = "f32", name = "Eemb", role = "table", shape = ["Eemb_d0", 128]}
// GPU-SAME: {dtype = "f32", name = "score", role = "output", shape = ["M", "N"]}
// GPU: llvm.func @distmult({{.*}} attributes {gpu.kernel
// CPU-LABEL: llvm.func @distmult(
bvec.func @distmult(%Eemb: !bvec.table<?x128xf32>, %Remb: !bvec.table<?x128xf32>,
                    %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %hr = bvec.mul %head, %rel : !bvec.vec<?x128xf32>
  %score = bvec.vec_mul_vec %hr, %tail : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// A distance: the norm's square root and the operations after it are the
// projection (here gamma - ||h + r - t||).
// CHECK-LABEL: func.func @margin
// CHECK: accumulate add output dense
// CHECK: ^bb0(%[[H:.*]]: f32, %[[T:.*]]: f32, %[[R:.*]]: f32):
// CHECK: %[[D:.*]] = arith.subf %[[H]], %[[T]] : f32
// CHECK: %[[X:.*]] = arith.addf %[[D]], %[[R]] : f32
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK: tile.yield %[[SQ]] : f32
// CHECK: } project {
// CHECK: ^bb0(%[[ACC:.*]]: f32, %{{.*}}: index, %{{.*}}: index):
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[CLAMPED:.*]] = arith.maximumf %[[ACC]], %[[ZERO]] : f32
// CHECK: %[[ROOT:.*]] = math.sqrt %[[CLAMPED]] : f32
// CHECK: %[[G:.*]] = arith.constant 1.200000e+01 : f32
// CHECK: %[[M:.*]] = arith.subf %[[G]], %[[ROOT]] : f32
// CHECK: tile.yield %[[M]] : f32
bvec.func @margin(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %x = bvec.add %diff, %rel : !bvec.vec<?x?xf32>
  %n = bvec.norm %x, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %gamma = bvec.constant 12.0 : !bvec.scalar<?xf32>
  %score = bvec.sub %gamma, %n : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Sums of several reductions combined linearly are one sum (ComplEx's real
// part minus... here 2 * forward - backward); a maximum is its own
// accumulator; rows in half precision are widened; a constant vector and a
// constant scale are constants.
// CHECK-LABEL: func.func @linear
// CHECK: accumulate add
// CHECK: ^bb0(%[[H:.*]]: f32, %[[T:.*]]: f32, %[[R:.*]]: f32):
// CHECK: %[[F:.*]] = arith.mulf %[[H]], %[[T]] : f32
// CHECK: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[F2:.*]] = arith.mulf %[[TWO]], %[[F]] : f32
// CHECK: %[[B:.*]] = arith.mulf %[[R]], %[[T]] : f32
// CHECK: %[[NEG:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[B2:.*]] = arith.mulf %[[NEG]], %[[B]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[F2]], %[[B2]] : f32
// CHECK: tile.yield %[[SUM]] : f32
bvec.func @linear(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %forward = bvec.vec_mul_vec %head, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %backward = bvec.vec_mul_vec %rel, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %two = bvec.constant 2.0 : !bvec.scalar<?xf32>
  %f2 = bvec.mul %two, %forward : !bvec.scalar<?xf32>
  %score = bvec.sub %f2, %backward : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// CHECK-LABEL: func.func @closest
// CHECK-SAME: memref<?x?xbf16> {kge.param = "Eemb"}
// CHECK: accumulate min output dense
// CHECK: ^bb0(%[[H:.*]]: bf16, %[[T:.*]]: bf16):
// CHECK: %[[HW:.*]] = arith.extf %[[H]] : bf16 to f32
// CHECK: %[[TW:.*]] = arith.extf %[[T]] : bf16 to f32
// CHECK: %[[D:.*]] = arith.subf %[[HW]], %[[TW]] : f32
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[S:.*]] = arith.mulf %[[HALF]], %[[D]] : f32
// CHECK: %[[EPS:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[A:.*]] = arith.addf %[[S]], %[[EPS]] : f32
// CHECK: tile.yield %[[A]] : f32
bvec.func @closest(%Eemb: !bvec.table<?x?xbf16>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %d = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %half = bvec.constant 0.5 : !bvec.scalar<?xf32>
  %s = bvec.scal_mul_vec %half, %d : !bvec.scalar<?xf32>, !bvec.vec<?x?xf32> -> !bvec.vec<?x?xf32>
  %one = bvec.constant 1.0 : !bvec.vec<?x?xf32>
  %a = bvec.add %s, %one : !bvec.vec<?x?xf32>
  %score = bvec.reduce min %a : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// A static batch stays the edges' extent; the negatives are as many as the
// caller gives.
// CHECK-LABEL: func.func @static_batch(
// CHECK-SAME: %{{.*}}: memref<64xi64> {kge.param = "h"}, %{{.*}}: memref<?xi64> {kge.param = "t"}, %{{.*}}: memref<64x?xf32> {kge.param = "score"})
bvec.func @static_batch(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<64xi64>, %t: !bvec.indices<64xi64>)
    -> (score: !bvec.scalar<64xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<64xi64> -> !bvec.vec<64x?xf32>
  %y = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<64xi64> -> !bvec.vec<64x?xf32>
  %s = bvec.vec_mul_vec %x, %y : !bvec.vec<64x?xf32>, !bvec.vec<64x?xf32> -> !bvec.scalar<64xf32>
  bvec.return %s : !bvec.scalar<64xf32>
}
