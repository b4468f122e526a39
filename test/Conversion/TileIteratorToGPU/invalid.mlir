// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu -verify-diagnostics

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @top(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<4xf32>, %r: memref<4xi32>, %c: memref<4xi32>) {
  // expected-error @+1 {{output top_k is not lowered to the GPU yet (the CPU path runs it)}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%v, %r, %c : memref<4xf32>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 4}
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
// expected-error @+1 {{holds 2 tile.tasks; the GPU lowering compiles one task per function}}
func.func @two(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate max output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %b : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @local(%A: memref<?x?xf32>, %B: memref<?x?xf32>) {
  // expected-error @+1 {{'memref.alloc' op is not a tile.task; a tile function holds only tasks}}
  %C = memref.alloc() : memref<4x4xf32>
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<4x4xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
      }
  return
}
