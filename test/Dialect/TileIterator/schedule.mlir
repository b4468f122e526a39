// RUN: kge-opt %s | FileCheck %s
// RUN: kge-opt %s | kge-opt | FileCheck %s
// RUN: kge-opt %s -mlir-print-op-generic | kge-opt | FileCheck %s

// Hand-written schedules: the kernels of a task as tile iterators, printed
// back as written (the schedule region's terminator implicit).

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>
#ik_g = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>

// GEMM at FP32 accuracy on mma.sync, then CUDA cores.
// CHECK-LABEL: func.func @gemm
// CHECK: } schedule {
// CHECK-NEXT: tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
// CHECK-NEXT: %[[A:.*]] = tile.load input 0 dense via async : !tile.tile<128x16xf32>
// CHECK-NEXT: %[[B:.*]] = tile.load input 1 dense via async : !tile.tile<16x128xf32>
// CHECK-NEXT: %[[ACC:.*]] = tile.mma %[[A]] x %[[B]] tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
// CHECK-NEXT: tile.store %[[ACC]] staged : !tile.tile<128x128xf32>
// CHECK-NEXT: }
// CHECK-NEXT: tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
// CHECK-NEXT: %[[A2:.*]] = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
// CHECK-NEXT: %[[B2:.*]] = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
// CHECK-NEXT: %[[ACC2:.*]] = tile.compute %[[A2]], %[[B2]] : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
// CHECK-NEXT: tile.store %[[ACC2]] dense : !tile.tile<64x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NOT: tile.yield
// CHECK: return
func.func @gemm(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3
              : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
        tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// Half precision on warpgroup MMA: TMA loads, a cluster of two blocks along
// M, the kernel preferred from K = 1024 on.
// CHECK-LABEL: func.func @gemm_bf16
// CHECK: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 2 min_k 1024 {
// CHECK: tile.load input 0 dense via tma : !tile.tile<128x64xbf16>
// CHECK: tile.load input 1 dense via tma : !tile.tile<64x256xbf16>
// CHECK: tile.mma %{{.*}} x %{{.*}} bf16 warpgroup : !tile.tile<128x64xbf16> x !tile.tile<64x256xbf16> -> !tile.tile<128x256xf32>
// CHECK: tile.kernel "" block [32, 32, 8] thread [2, 2] {
// CHECK: tile.compute %{{.*}}, %{{.*}} : !tile.tile<32x8xbf16>, !tile.tile<8x32xbf16> -> !tile.tile<32x32xf32>
func.func @gemm_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xbf16>, memref<?x?xbf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: bf16, %b: bf16):
        %x = arith.extf %a : bf16 to f32
        %y = arith.extf %b : bf16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 2 min_k 1024 {
          %a = tile.load input 0 dense via tma : !tile.tile<128x64xbf16>
          %b = tile.load input 1 dense via tma : !tile.tile<64x256xbf16>
          %acc = tile.mma %a x %b bf16 warpgroup
              : !tile.tile<128x64xbf16> x !tile.tile<64x256xbf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
        tile.kernel "" block [32, 32, 8] thread [2, 2] {
          %a = tile.load input 0 dense via shared : !tile.tile<32x8xbf16>
          %b = tile.load input 1 dense via shared : !tile.tile<8x32xbf16>
          %acc = tile.compute %a, %b
              : !tile.tile<32x8xbf16>, !tile.tile<8x32xbf16> -> !tile.tile<32x32xf32>
          tile.store %acc dense : !tile.tile<32x32xf32>
        }
      }
  return
}

// Segments: rows gathered through h and sorted by their relation r, times
// the relation's matrix; spatial-only inputs are loaded to registers and
// passed to the store (`with`).
// CHECK-LABEL: func.func @transr
// CHECK: tile.kernel "_mma" block [16, 128, 16] thread [2, 8] stages 4 {
// CHECK-NEXT: %[[E:.*]] = tile.load input 0 gathered sorted via async : !tile.tile<16x16xf32>
// CHECK-NEXT: %[[W:.*]] = tile.load input 1 per_key via async : !tile.tile<16x128xf32>
// CHECK-NEXT: %[[S:.*]] = tile.load input 2 dense sorted via registers : !tile.tile<16xf32>
// CHECK-NEXT: %[[ACC:.*]] = tile.mma %[[E]] x %[[W]] tf32 : !tile.tile<16x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<16x128xf32>
// CHECK-NEXT: tile.store %[[ACC]] dense with %[[S]] : !tile.tile<16x128xf32>, !tile.tile<16xf32>
// CHECK: tile.kernel "_small" block [16, 128, 8] thread [2, 4] {
// CHECK: tile.compute %{{.*}}, %{{.*}}, %{{.*}} : !tile.tile<16x8xf32>, !tile.tile<8x128xf32>, !tile.tile<16xf32> -> !tile.tile<16x128xf32>
func.func @transr(%h: memref<?xi32>, %E: memref<?x?xf32>, %r: memref<?xi32>,
                  %W: memref<?x?x?xf32>, %s: memref<?xf32>, %Y: memref<?x?xf32>) {
  tile.task ins(%E, %W, %s : memref<?x?xf32>, memref<?x?x?xf32>, memref<?xf32>)
      outs(%Y : memref<?x?xf32>) gathers(%h, %r : memref<?xi32>, memref<?xi32>)
      maps [#ik_g, #ikj, #i] accumulate add output dense
      {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32, %t: f32):
        %p = arith.mulf %e, %w : f32
        tile.yield %p : f32
      } project {
      ^bb0(%acc: f32, %i: index, %j: index, %t: f32):
        %q = arith.mulf %acc, %t : f32
        tile.yield %q : f32
      } schedule {
        tile.kernel "_mma" block [16, 128, 16] thread [2, 8] stages 4 {
          %e = tile.load input 0 gathered sorted via async : !tile.tile<16x16xf32>
          %w = tile.load input 1 per_key via async : !tile.tile<16x128xf32>
          %t = tile.load input 2 dense sorted via registers : !tile.tile<16xf32>
          %acc = tile.mma %e x %w tf32
              : !tile.tile<16x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<16x128xf32>
          tile.store %acc dense with %t : !tile.tile<16x128xf32>, !tile.tile<16xf32>
        }
        tile.kernel "_small" block [16, 128, 8] thread [2, 4] {
          %e = tile.load input 0 gathered sorted via shared : !tile.tile<16x8xf32>
          %w = tile.load input 1 per_key via shared : !tile.tile<8x128xf32>
          %t = tile.load input 2 dense sorted via registers : !tile.tile<16xf32>
          %acc = tile.compute %e, %w, %t
              : !tile.tile<16x8xf32>, !tile.tile<8x128xf32>, !tile.tile<16xf32> -> !tile.tile<16x128xf32>
          tile.store %acc dense with %t : !tile.tile<16x128xf32>, !tile.tile<16xf32>
        }
      }
  return
}

// TF32 on warpgroup MMA with B stored n-contiguous: B is read from its
// transposed copy.
// CHECK-LABEL: func.func @gemm_tf32
// CHECK: tile.load input 1 dense transposed via tma : !tile.tile<32x256xf32>
// CHECK: tile.mma %{{.*}} x %{{.*}} tf32 warpgroup : !tile.tile<128x32xf32> x !tile.tile<32x256xf32> -> !tile.tile<128x256xf32>
func.func @gemm_tf32(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 min_k 1024 {
          %a = tile.load input 0 dense via tma : !tile.tile<128x32xf32>
          %b = tile.load input 1 dense transposed via tma : !tile.tile<32x256xf32>
          %acc = tile.mma %a x %b tf32 warpgroup
              : !tile.tile<128x32xf32> x !tile.tile<32x256xf32> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// A product form on mma.sync: DistMult's (h * r) . t, the tiles of both row
// operands multiplied by the column operand's.
// CHECK-LABEL: func.func @product_form
// CHECK: tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
// CHECK: %[[ACC:.*]] = tile.mma %[[H:.*]], %[[R:.*]] x %[[T:.*]] tf32 : !tile.tile<128x16xf32>, !tile.tile<128x16xf32> x !tile.tile<128x16xf32> -> !tile.tile<128x128xf32>
#jk = affine_map<(i, j, k) -> (j, k)>
func.func @product_form(%H: memref<?x?xf32>, %R: memref<?x?xf32>, %T: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%H, %R, %T : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%h: f32, %r: f32, %t: f32):
        %hr = arith.mulf %h, %r : f32
        %p = arith.mulf %hr, %t : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %h = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %r = tile.load input 1 dense via async : !tile.tile<128x16xf32>
          %t = tile.load input 2 dense via async : !tile.tile<128x16xf32>
          %acc = tile.mma %h, %r x %t tf32
              : !tile.tile<128x16xf32>, !tile.tile<128x16xf32> x !tile.tile<128x16xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %h = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %r = tile.load input 1 dense via shared : !tile.tile<64x16xf32>
          %t = tile.load input 2 dense via shared : !tile.tile<64x16xf32>
          %acc = tile.compute %h, %r, %t
              : !tile.tile<64x16xf32>, !tile.tile<64x16xf32>, !tile.tile<64x16xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}
