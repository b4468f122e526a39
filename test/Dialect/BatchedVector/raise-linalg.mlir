// RUN: kge-opt %s -bvec-raise-linalg -split-input-file -verify-diagnostics | FileCheck %s

// Score functions written in linalg/tensor become bvec functions; anything
// else stays as it was, with a remark naming what stopped it.

#row = affine_map<(b, d) -> (b)>
#id = affine_map<(b, d) -> (b, d)>
#edge = affine_map<(b) -> (b)>

// CHECK-LABEL: bvec.func @transe(
// CHECK-SAME: %Eemb: !bvec.table<?x32xf32>, %Remb: !bvec.table<?x32xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>)
// CHECK-NEXT: %[[H:.*]] = bvec.gather_vec %Eemb[%h]
// CHECK-NEXT: %[[R:.*]] = bvec.gather_vec %Remb[%r]
// CHECK-NEXT: %[[T:.*]] = bvec.gather_vec %Eemb[%t]
// CHECK-NEXT: %[[HR:.*]] = bvec.add %[[H]], %[[R]]
// CHECK-NEXT: %[[X:.*]] = bvec.sub %[[HR]], %[[T]]
// CHECK-NEXT: %[[SQ:.*]] = bvec.vec_mul_vec %[[X]], %[[X]]
// CHECK-NEXT: %[[N:.*]] = bvec.sqrt %[[SQ]] : !bvec.scalar<?xf32>
// CHECK-NEXT: %[[S:.*]] = bvec.neg %[[N]] : !bvec.scalar<?xf32>
// CHECK-NEXT: bvec.return %[[S]]
// CHECK-NOT: func.func @transe
func.func @transe(%E: tensor<?x32xf32> {kge.name = "Eemb"}, %R: tensor<?x32xf32> {kge.name = "Remb"},
                  %h: tensor<?xi64> {kge.name = "h"}, %r: tensor<?xi64> {kge.name = "r"},
                  %t: tensor<?xi64> {kge.name = "t"}) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
  %head = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?xi64>) outs(%e : tensor<?x32xf32>) {
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract %E[%ii, %d] : tensor<?x32xf32>
      linalg.yield %v : f32
  } -> tensor<?x32xf32>
  %rel = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<?xi64>) outs(%e : tensor<?x32xf32>) {
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract %R[%ii, %d] : tensor<?x32xf32>
      linalg.yield %v : f32
  } -> tensor<?x32xf32>
  %tail = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<?xi64>) outs(%e : tensor<?x32xf32>) {
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract %E[%ii, %d] : tensor<?x32xf32>
      linalg.yield %v : f32
  } -> tensor<?x32xf32>
  %hr = linalg.add ins(%head, %rel : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %x = linalg.sub ins(%hr, %tail : tensor<?x32xf32>, tensor<?x32xf32>) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %sq = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x32xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %p = arith.mulf %a, %a : f32
      %s = arith.addf %p, %acc : f32
      linalg.yield %s : f32
  } -> tensor<?xf32>
  %norm = math.sqrt %sq : tensor<?xf32>
  %score = arith.negf %norm : tensor<?xf32>
  return %score : tensor<?xf32>
}

// -----

#row = affine_map<(b, d) -> (b)>
#id = affine_map<(b, d) -> (b, d)>

// linalg.reduce of a max, parameters without names.
// CHECK-LABEL: bvec.func @max_of_product(%arg0: !bvec.table<?x8xf32>, %arg1: !bvec.indices<?xi32>
// CHECK: bvec.mul
// CHECK: bvec.reduce max
func.func @max_of_product(%E: tensor<?x8xf32>, %h: tensor<?xi32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?xi32>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %low = arith.constant 0xFF800000 : f32
  %z = linalg.fill ins(%low : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?xi32>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%i: i32, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i32 to index
      %v = tensor.extract %E[%ii, %d] : tensor<?x8xf32>
      linalg.yield %v : f32
  } -> tensor<?x8xf32>
  %sq = linalg.mul ins(%rows, %rows : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = linalg.reduce ins(%sq : tensor<?x8xf32>) outs(%z : tensor<?xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }
  return %m : tensor<?xf32>
}

// -----

// A tensor of rank 3 is neither a table of vectors nor an index array.
// CHECK-LABEL: func.func @cube
// expected-remark @below {{not raised to bvec: argument 0 is neither a table (a rank-2 floating-point tensor) nor an index array (a rank-1 i32/i64 tensor)}}
func.func @cube(%E: tensor<?x4x4xf32>, %h: tensor<?xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?xi64>
  %eb = tensor.empty(%n) : tensor<?xf32>
  return %eb : tensor<?xf32>
}

// -----

#row = affine_map<(b, d) -> (b)>
#id = affine_map<(b, d) -> (b, d)>
#first = affine_map<(b, d) -> (d)>

// A reduction over the batch.
// CHECK-LABEL: func.func @batch_sum
func.func @batch_sum(%E: tensor<?x8xf32>, %h: tensor<?xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?xi64>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract %E[%ii, %d] : tensor<?x8xf32>
      linalg.yield %v : f32
  } -> tensor<?x8xf32>
  // expected-remark @below {{not raised to bvec: a reduction must run along the vectors' axis: loops (parallel, reduction), output (b, d) -> (b)}}
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["reduction", "parallel"]}
      ins(%rows : tensor<?x8xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

#row = affine_map<(b, d) -> (b)>
#id = affine_map<(b, d) -> (b, d)>

// A sum that starts at one, and an operation no score function has.
// CHECK-LABEL: func.func @from_one
func.func @from_one(%E: tensor<?x8xf32>, %h: tensor<?xi64>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %h, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?x8xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %z = linalg.fill ins(%one : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
  %rows = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<?xi64>) outs(%e : tensor<?x8xf32>) {
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract %E[%ii, %d] : tensor<?x8xf32>
      linalg.yield %v : f32
  } -> tensor<?x8xf32>
  // expected-remark @below {{not raised to bvec: a reduction's output must start at its combination's identity (linalg.fill with 0, -inf or +inf)}}
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%rows : tensor<?x8xf32>) outs(%z : tensor<?xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @matmul
func.func @matmul(%E: tensor<8x8xf32>, %h: tensor<8xi64>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8x8xf32>
  // expected-remark @below {{not raised to bvec: 'linalg.matmul' is not an operation of a score function}}
  %p = linalg.matmul ins(%E, %E : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %eb = tensor.empty() : tensor<8xf32>
  return %eb : tensor<8xf32>
}
