// RUN: kge-opt %s -tile-raise-linalg | FileCheck %s

// CHECK-DAG: #[[IK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[KJ:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG: #[[JK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[KI:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>

// linalg.matmul accumulates into C: a dense output with update.
// CHECK-LABEL: func.func @matmul
// CHECK: tile.task ins(%{{.*}}, %{{.*}} : memref<?x?xf32>, memref<?x?xf32>) outs(%{{.*}} : memref<?x?xf32>) maps [#[[IK]], #[[KJ]]] accumulate add output dense {update} inner {
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK: %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK: tile.yield %[[P]] : f32
// CHECK-NOT: linalg.matmul
func.func @matmul(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  linalg.matmul ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
  return
}

// B transposed, bf16 operands widened in the inner computation.
// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK: maps [#[[IK]], #[[JK]]] accumulate add output dense {update} inner {
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16):
// CHECK: arith.extf %[[A]] : bf16 to f32
func.func @matmul_transpose_b(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                 affine_map<(m, n, k) -> (m, n)>]
    ins(%A, %B : memref<?x?xbf16>, memref<?x?xbf16>) outs(%C : memref<?x?xf32>)
  return
}

// The tropical (max-plus) product with a per-k weight, loops in the order
// (k, j, i): the task's axes are the parallel loops in order (j, then i).
// CHECK-LABEL: func.func @max_plus
// CHECK: maps [#[[JK]], #[[KI]], #[[K]]] accumulate max output dense {update} inner {
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[W:.*]]: f32):
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK: %[[V:.*]] = arith.mulf %[[S]], %[[W]] : f32
// CHECK: tile.yield %[[V]] : f32
func.func @max_plus(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %w: memref<?xf32>, %C: memref<?x?xf32>) {
  linalg.generic {
      indexing_maps = [affine_map<(k, j, i) -> (i, k)>, affine_map<(k, j, i) -> (k, j)>,
                       affine_map<(k, j, i) -> (k)>, affine_map<(k, j, i) -> (j, i)>],
      iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%A, %B, %w : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>) outs(%C : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %x: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    %v = arith.mulf %s, %x : f32
    %m = arith.maximumf %out, %v : f32
    linalg.yield %m : f32
  }
  return
}

// Not matmul-like, left alone: tensors, four loops, a body that reads the
// output twice, an input indexed by both parallel loops.
// CHECK-LABEL: func.func @left_alone
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK: linalg.batch_matmul
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: tile.task
func.func @left_alone(%t: tensor<4x4xf32>, %b3: memref<2x4x4xf32>, %c3: memref<2x4x4xf32>,
                      %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) -> tensor<4x4xf32> {
  %r = linalg.matmul ins(%t, %t : tensor<4x4xf32>, tensor<4x4xf32>) outs(%t : tensor<4x4xf32>) -> tensor<4x4xf32>
  linalg.batch_matmul ins(%b3, %b3 : memref<2x4x4xf32>, memref<2x4x4xf32>) outs(%c3 : memref<2x4x4xf32>)
  linalg.generic {
      indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>,
                       affine_map<(i, j, k) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %v = arith.mulf %a, %out : f32
    %m = arith.addf %out, %v : f32
    linalg.yield %m : f32
  }
  linalg.generic {
      indexing_maps = [affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (k, j)>,
                       affine_map<(i, j, k) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%C, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %v = arith.mulf %a, %b : f32
    %m = arith.addf %out, %v : f32
    linalg.yield %m : f32
  }
  return %r : tensor<4x4xf32>
}
