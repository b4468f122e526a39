// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu -verify-diagnostics

// Schedules the IR allows but the GPU lowering does not build: each refused
// with the reason, before any code is emitted.

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// The tensor-core iterators are built for a few tilings only.
func.func @unbuilt_tiling(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{has a tensor-core tiling the emitter does not build (block 64x128x16, thread 4x8, stages 4); it builds block 128x128x16 thread 8x8 stages 4, block 64x64x16 thread 4x8 stages 4, block 16x128x16 thread 2x8 stages 4 (segments)}}
        tile.kernel "_mma" block [64, 128, 16] thread [4, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32
              : !tile.tile<64x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<64x128xf32>
          tile.store %acc staged : !tile.tile<64x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// tile.mma computes products; this inner computation is not one.
func.func @not_a_product(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %m = arith.maximumf %x, %y : f32
        tile.yield %m : f32
      } schedule {
        tile.kernel "_mma" block [64, 64, 32] thread [4, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<64x32xf16>
          %b = tile.load input 1 dense via async : !tile.tile<32x64xf16>
          // expected-error @below {{at f16: the task is not a product the tensor cores compute}}
          %acc = tile.mma %a x %b f16
              : !tile.tile<64x32xf16> x !tile.tile<32x64xf16> -> !tile.tile<64x64xf32>
          tile.store %acc staged : !tile.tile<64x64xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf16>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf16>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Warpgroup MMA does not take the three-pass FP32 products.
func.func @warpgroup_tf32x3(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 {
          %a = tile.load input 0 dense via tma : !tile.tile<128x32xf32>
          %b = tile.load input 1 dense via tma : !tile.tile<32x256xf32>
          // expected-error @below {{at tf32x3 on warpgroup MMA is not built: tf32x3 runs on mma.sync}}
          %acc = tile.mma %a x %b tf32x3 warpgroup
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>

// Segment tiles are cut once for all kernels: they share their rows.
func.func @segment_rows(%h: memref<?xi32>, %E: memref<?x?xf32>, %r: memref<?xi32>,
                        %W: memref<?x?x?xf32>, %Y: memref<?x?xf32>) {
  // expected-error @below {{segment variants must share their rows per tile}}
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>) outs(%Y : memref<?x?xf32>)
      gathers(%h, %r : memref<?xi32>, memref<?xi32>) maps [#ik, #ikj]
      accumulate add output dense {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32):
        %p = arith.mulf %e, %w : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [16, 128, 8] thread [2, 4] {
          %e = tile.load input 0 gathered sorted via shared : !tile.tile<16x8xf32>
          %w = tile.load input 1 per_key via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %e, %w : !tile.tile<16x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<16x128xf32>
          tile.store %acc dense : !tile.tile<16x128xf32>
        }
        tile.kernel "_wide" block [32, 128, 8] thread [2, 4] {
          %e = tile.load input 0 gathered sorted via shared : !tile.tile<32x8xf32>
          %w = tile.load input 1 per_key via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %e, %w : !tile.tile<32x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<32x128xf32>
          tile.store %acc dense : !tile.tile<32x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Top-k sorts a block's candidates in shared memory.
func.func @top_k_block(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %v: memref<8xf32>,
                       %ri: memref<8xi32>, %ci: memref<8xi32>) {
  // expected-error @below {{output top_k on the GPU sorts a block's 16384 pairs in shared memory: the block tile must hold a power of two of at most 4096 pairs (block-m x block-n)}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%v, %ri, %ci : memref<8xf32>, memref<8xi32>, memref<8xi32>)
      maps [#ik, #kj] accumulate add output top_k {k = 8 : i64}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [128, 128, 8] thread [8, 8] {
          %a = tile.load input 0 dense via shared : !tile.tile<128x8xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %a, %b : !tile.tile<128x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<128x128xf32>
          tile.store %acc top_k : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// A product form's factors are computed from fragments on mma.sync, or by
// the producer threads of warpgroup MMA; on TMA loads, warpgroup MMA
// multiplies its operands as loaded.
func.func @warpgroup_factors(%H: memref<?x?xf16>, %R: memref<?x?xf16>, %T: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%H, %R, %T : memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%h: f16, %r: f16, %t: f16):
        %hr = arith.mulf %h, %r : f16
        %p = arith.mulf %hr, %t : f16
        %w = arith.extf %p : f16 to f32
        tile.yield %w : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %h = tile.load input 0 dense via tma : !tile.tile<128x64xf16>
          %r = tile.load input 1 dense via tma : !tile.tile<128x64xf16>
          %t = tile.load input 2 dense via tma : !tile.tile<256x64xf16>
          // expected-error @below {{'tile.mma' op warpgroup MMA on loads via tma multiplies one operand a side (the product form of several loads via threads, or runs on mma.sync)}}
          %acc = tile.mma %h, %r x %t f16 warpgroup
              : !tile.tile<128x64xf16>, !tile.tile<128x64xf16> x !tile.tile<256x64xf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %h = tile.load input 0 dense via shared : !tile.tile<64x16xf16>
          %r = tile.load input 1 dense via shared : !tile.tile<64x16xf16>
          %t = tile.load input 2 dense via shared : !tile.tile<64x16xf16>
          %acc = tile.compute %h, %r, %t
              : !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Stages of nine 128 x 32 f16 tiles: four of them exceed the 200 KB of the
// pipeline; the emitter builds this tiling with two.
func.func @deep_stages(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf16>, %D: memref<?x?xf16>,
                       %E: memref<?x?xf16>, %F: memref<?x?xf16>, %G: memref<?x?xf16>, %H: memref<?x?xf16>,
                       %T: memref<?x?xf16>, %S: memref<?x?xf32>) {
  tile.task ins(%A, %B, %C, %D, %E, %F, %G, %H, %T : memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>) outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #ik, #ik, #ik, #ik, #ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%a: f16, %b: f16, %c: f16, %d: f16, %e: f16, %f: f16, %g: f16, %h: f16, %t: f16):
        %0 = arith.addf %a, %b : f16
        %1 = arith.addf %0, %c : f16
        %2 = arith.addf %1, %d : f16
        %3 = arith.addf %2, %e : f16
        %4 = arith.addf %3, %f : f16
        %5 = arith.addf %4, %g : f16
        %6 = arith.addf %5, %h : f16
        %7 = arith.mulf %6, %t : f16
        %8 = arith.extf %7 : f16 to f32
        tile.yield %8 : f32
      } schedule {
        // expected-error @below {{has a tensor-core tiling the emitter does not build (block 128x128x32, thread 8x8, stages 4); it builds block 128x128x32 thread 8x8 stages 2, block 64x64x32 thread 4x8 stages 4, block 16x128x32 thread 2x8 stages 4 (segments)}}
        tile.kernel "_mma" block [128, 128, 32] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x32xf16>
          %b = tile.load input 1 dense via async : !tile.tile<128x32xf16>
          %c = tile.load input 2 dense via async : !tile.tile<128x32xf16>
          %d = tile.load input 3 dense via async : !tile.tile<128x32xf16>
          %e = tile.load input 4 dense via async : !tile.tile<128x32xf16>
          %f = tile.load input 5 dense via async : !tile.tile<128x32xf16>
          %g = tile.load input 6 dense via async : !tile.tile<128x32xf16>
          %h = tile.load input 7 dense via async : !tile.tile<128x32xf16>
          %t = tile.load input 8 dense via async : !tile.tile<128x32xf16>
          %acc = tile.mma %a, %b, %c, %d, %e, %f, %g, %h x %t f16
              : !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16>, !tile.tile<128x32xf16> x !tile.tile<128x32xf16> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf16>
          %b = tile.load input 1 dense via shared : !tile.tile<64x16xf16>
          %c = tile.load input 2 dense via shared : !tile.tile<64x16xf16>
          %d = tile.load input 3 dense via shared : !tile.tile<64x16xf16>
          %e = tile.load input 4 dense via shared : !tile.tile<64x16xf16>
          %f = tile.load input 5 dense via shared : !tile.tile<64x16xf16>
          %g = tile.load input 6 dense via shared : !tile.tile<64x16xf16>
          %h = tile.load input 7 dense via shared : !tile.tile<64x16xf16>
          %t = tile.load input 8 dense via shared : !tile.tile<64x16xf16>
          %acc = tile.compute %a, %b, %c, %d, %e, %f, %g, %h, %t
              : !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

// A kernel of long runs whose partner (the other tensor-core segment
// kernel) does not follow it.
#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func @transr(%arg0: memref<?x?xf32> {kge.param = "E"}, %arg1: memref<?x?x?xf32> {kge.param = "W"}, %arg2: memref<?x?xf32> {kge.param = "R"}, %arg3: memref<?xi32> {kge.param = "h"}, %arg4: memref<?xi32> {kge.param = "r"}, %arg5: memref<?xi32> {kge.param = "t"}, %arg6: memref<?xf32> {kge.param = "S"}) {
    tile.task ins(%arg0, %arg0, %arg1, %arg2 : memref<?x?xf32>, memref<?x?xf32>, memref<?x?x?xf32>, memref<?x?xf32>) outs(%arg6 : memref<?xf32>) gathers(%arg3, %arg5, %arg4, %arg4 : memref<?xi32>, memref<?xi32>, memref<?xi32>, memref<?xi32>) maps [#map, #map, #map1, #map2] accumulate add output reduce {gathered = [[0, 0], [1, 0], [2, 0], [3, 0]]} inner {
    ^bb0(%arg7: f32, %arg8: f32, %arg9: f32, %arg10: f32):
      %0 = arith.subf %arg7, %arg8 : f32
      %1 = arith.mulf %0, %arg9 : f32
      tile.yield %1 : f32
    } project {
    ^bb0(%arg7: f32, %arg8: index, %arg9: index, %arg10: f32):
      %0 = arith.addf %arg7, %arg10 : f32
      %1 = arith.mulf %0, %0 : f32
      tile.yield %1 : f32
    } finalize {
    ^bb0(%arg7: f32, %arg8: index):
      %0 = math.sqrt %arg7 : f32
      tile.yield %0 : f32
    } schedule {
      // expected-error @below {{takes long runs, so the next kernel must be the only other segment kernel of its kind, with fewer rows per tile and the same columns (it takes the rest of every run), and no other kernel may take long runs}}
      tile.kernel "_mma_long" block [64, 128, 16] thread [4, 8] stages 4 long_runs {
        %0 = tile.load input 0 gathered sorted via async : !tile.tile<64x16xf32>
        %1 = tile.load input 1 gathered sorted via async : !tile.tile<64x16xf32>
        %2 = tile.load input 2 per_key via async : !tile.tile<16x128xf32>
        %3 = tile.load input 3 gathered sorted via registers : !tile.tile<64x128xf32>
        %4 = tile.mma %0, %1 x %2 tf32x3 : !tile.tile<64x16xf32>, !tile.tile<64x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<64x128xf32>
        tile.store %4 reduce with %3 : !tile.tile<64x128xf32>, !tile.tile<64x128xf32>
      }
      tile.kernel "_small" block [16, 128, 8] thread [2, 4] {
        %0 = tile.load input 0 gathered sorted via shared : !tile.tile<16x8xf32>
        %1 = tile.load input 1 gathered sorted via shared : !tile.tile<16x8xf32>
        %2 = tile.load input 2 per_key via shared : !tile.tile<8x128xf32>
        %3 = tile.load input 3 gathered sorted via registers : !tile.tile<16x128xf32>
        %4 = tile.compute %0, %1, %2, %3 : !tile.tile<16x8xf32>, !tile.tile<16x8xf32>, !tile.tile<8x128xf32>, !tile.tile<16x128xf32> -> !tile.tile<16x128xf32>
        tile.store %4 reduce with %3 : !tile.tile<16x128xf32>, !tile.tile<16x128xf32>
      }
tile.kernel "_mma" block [16, 128, 16] thread [2, 8] stages 4 {
        %0 = tile.load input 0 gathered sorted via async : !tile.tile<16x16xf32>
        %1 = tile.load input 1 gathered sorted via async : !tile.tile<16x16xf32>
        %2 = tile.load input 2 per_key via async : !tile.tile<16x128xf32>
        %3 = tile.load input 3 gathered sorted via registers : !tile.tile<16x128xf32>
        %4 = tile.mma %0, %1 x %2 tf32x3 : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<16x128xf32>
        tile.store %4 reduce with %3 : !tile.tile<16x128xf32>, !tile.tile<16x128xf32>
      }
          }
    return
  }
}


// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// The producer threads write a stage per term: four terms are more than
// they take (and the pipeline's four stages could not hold a step).
func.func @threads_four_terms(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf16>, %D: memref<?x?xf16>,
                              %X: memref<?x?xf16>, %Y: memref<?x?xf16>, %Z: memref<?x?xf16>, %W: memref<?x?xf16>,
                              %S: memref<?x?xf32>) {
  tile.task ins(%A, %B, %C, %D, %X, %Y, %Z, %W : memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>,
                memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>)
      outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #ik, #ik, #jk, #jk, #jk, #jk] accumulate add output dense
      inner {
      ^bb0(%a: f16, %b: f16, %c: f16, %d: f16, %x: f16, %y: f16, %z: f16, %w: f16):
        %ax = arith.mulf %a, %x : f16
        %by = arith.mulf %b, %y : f16
        %cz = arith.mulf %c, %z : f16
        %dw = arith.mulf %d, %w : f16
        %s1 = arith.addf %ax, %by : f16
        %s2 = arith.addf %cz, %dw : f16
        %s = arith.addf %s1, %s2 : f16
        %e = arith.extf %s : f16 to f32
        tile.yield %e : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 dense via threads : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via threads : !tile.tile<128x64xf16>
          %c = tile.load input 2 dense via threads : !tile.tile<128x64xf16>
          %d = tile.load input 3 dense via threads : !tile.tile<128x64xf16>
          %x = tile.load input 4 dense via threads : !tile.tile<256x64xf16>
          %y = tile.load input 5 dense via threads : !tile.tile<256x64xf16>
          %z = tile.load input 6 dense via threads : !tile.tile<256x64xf16>
          %w = tile.load input 7 dense via threads : !tile.tile<256x64xf16>
          // expected-error @below {{on warpgroup MMA loads via threads a product form of 4 terms: its producer writes a stage per term, at most 3 (and fewer than the pipeline's stages)}}
          %acc = tile.mma %a, %b, %c, %d x %x, %y, %z, %w f16 warpgroup
              : !tile.tile<128x64xf16>, !tile.tile<128x64xf16>, !tile.tile<128x64xf16>, !tile.tile<128x64xf16>
                x !tile.tile<256x64xf16>, !tile.tile<256x64xf16>, !tile.tile<256x64xf16>, !tile.tile<256x64xf16>
                -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
        tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf16>
          %b = tile.load input 1 dense via shared : !tile.tile<64x16xf16>
          %c = tile.load input 2 dense via shared : !tile.tile<64x16xf16>
          %d = tile.load input 3 dense via shared : !tile.tile<64x16xf16>
          %x = tile.load input 4 dense via shared : !tile.tile<64x16xf16>
          %y = tile.load input 5 dense via shared : !tile.tile<64x16xf16>
          %z = tile.load input 6 dense via shared : !tile.tile<64x16xf16>
          %w = tile.load input 7 dense via shared : !tile.tile<64x16xf16>
          %acc = tile.compute %a, %b, %c, %d, %x, %y, %z, %w
              : !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>,
                !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>, !tile.tile<64x16xf16>
                -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}
