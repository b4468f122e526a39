// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu -verify-diagnostics

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @top_f64(%A: memref<?x?xf64>, %B: memref<?x?xf64>, %v: memref<4xf64>, %r: memref<4xi32>, %c: memref<4xi32>) {
  // expected-error @+1 {{output top_k on the GPU takes f32 or i32 values, got 'f64'}}
  tile.task ins(%A, %B : memref<?x?xf64>, memref<?x?xf64>)
      outs(%v, %r, %c : memref<4xf64>, memref<4xi32>, memref<4xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 4}
      inner {
      ^bb0(%a: f64, %b: f64):
        tile.yield %a : f64
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @top_many(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<1000xf32>, %r: memref<1000xi32>, %c: memref<1000xi32>) {
  // expected-error @+1 {{output top_k on the GPU keeps at most 512 values (k = 1000)}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
      outs(%v, %r, %c : memref<1000xf32>, memref<1000xi32>, memref<1000xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 1000}
      inner {
      ^bb0(%a: f32, %b: f32):
        tile.yield %a : f32
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
