// RUN: kge-translate --bvec-to-signature %s | FileCheck %s

// Static sizes are numbers; dynamic sizes are symbols tied together by the
// operations; index arrays name the tables they index.

// CHECK: "name": "static_and_dynamic"
// CHECK: "dtype": "f64"
// CHECK-NEXT: "name": "E"
// CHECK-NEXT: "role": "table"
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 100,
// CHECK-NEXT: "D_E"
// CHECK: "dtype": "i32"
// CHECK-NEXT: "indexes": [
// CHECK-NEXT: "E"
// CHECK: "name": "h"
// CHECK-NEXT: "role": "indices"
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 16
// CHECK: "name": "out"
// CHECK-NEXT: "role": "result"
// CHECK-NEXT: "shape": [
// CHECK-NEXT: 16,
// CHECK-NEXT: "D_E"
bvec.func @static_and_dynamic(%E: !bvec.table<100x?xf64>, %h: !bvec.indices<16xi32>)
    -> (out: !bvec.vec<16x?xf64>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<100x?xf64>, !bvec.indices<16xi32> -> !bvec.vec<16x?xf64>
  %w = bvec.exp %v : !bvec.vec<16x?xf64>
  bvec.return %w : !bvec.vec<16x?xf64>
}

