// RUN: kge-opt %s -split-input-file -verify-diagnostics

// One case per verifier error of the schedule: !tile.tile, tile.kernel,
// its iterators, and the schedule against its task.

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// !tile.tile: rank, extents, elements.
func.func @tile_rank(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{!tile.tile must have rank 1 or 2, got rank 3}}
          %a = tile.load input 0 dense via shared : !tile.tile<64x16x2xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @tile_extent(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{!tile.tile extents must be positive, got 0}}
          %a = tile.load input 0 dense via shared : !tile.tile<0x16xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @tile_element(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{!tile.tile elements must be integers or floats, got 'index'}}
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xindex>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// tile.kernel: its tiling.
func.func @kernel_extents(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{takes block [m, n, k] and thread [m, n], got 2 and 2 extents}}
        tile.kernel "" block [64, 64] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_positive(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{tile extents must be positive, got 0}}
        tile.kernel "" block [64, 64, 16] thread [4, 0] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_thread_divides(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{thread tile 3x4 must divide the block tile 64x64}}
        tile.kernel "" block [64, 64, 16] thread [3, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_threads(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{has 4096 threads per block (at most 1024)}}
        tile.kernel "" block [128, 128, 16] thread [2, 2] {
          %a = tile.load input 0 dense via shared : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x128xf32>
          %acc = tile.compute %a, %b : !tile.tile<128x16xf32>, !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
          tile.store %acc dense : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_block_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{block-k 128 exceeds the block's 64 threads (each stages one step of k)}}
        tile.kernel "" block [16, 16, 128] thread [2, 2] {
          %a = tile.load input 0 dense via shared : !tile.tile<16x128xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<128x16xf32>
          %acc = tile.compute %a, %b : !tile.tile<16x128xf32>, !tile.tile<128x16xf32> -> !tile.tile<16x16xf32>
          tile.store %acc dense : !tile.tile<16x16xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_stages_cuda(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{'stages' are the tensor cores' pipeline; a kernel on CUDA cores has none}}
        tile.kernel "" block [64, 64, 16] thread [4, 4] stages 2 {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_warp_shape(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{on tensor cores a warp computes (8 thread-m) x (4 thread-n) pairs as 16 x 8 products: thread-m and thread-n must be even and divide block-m / 8 and block-n / 4, got block 128x128, thread 3x8}}
        tile.kernel "_mma" block [128, 128, 16] thread [3, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_mma_threads(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{has 16384 threads per block (at most 1024)}}
        tile.kernel "_mma" block [256, 256, 16] thread [2, 2] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<256x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x256xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<256x16xf32> x !tile.tile<16x256xf32> -> !tile.tile<256x256xf32>
          tile.store %acc staged : !tile.tile<256x256xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_mma_stages(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{on tensor cores needs 'stages' of at least 2 (the asynchronous loads' pipeline)}}
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_cluster(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{cluster_m must be 1, 2 or 4, got 3}}
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 cluster_m 3 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_cluster_sync(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{clusters (cluster_m 2) share TMA loads: only warpgroup MMA kernels have them}}
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 cluster_m 2 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_min_k(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{min_k must not be negative, got -1}}
        tile.kernel "" block [64, 64, 16] thread [4, 4] min_k -1 {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_order(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          // expected-error @below {{'tile.load' op is out of place: a kernel holds its loads, then one tile.mma or tile.compute, then one tile.store}}
          %c = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @kernel_no_store(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{must end with a compute step (tile.mma or tile.compute) and a tile.store}}
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// The loads against the task.
func.func @load_range(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{loads input 2 but the task has 2 inputs}}
          %c = tile.load input 2 dense via shared : !tile.tile<64x16xf32>
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_twice(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          // expected-error @below {{loads input 0 again: a kernel loads each input once}}
          %a2 = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_missing(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{has no tile.load of input 1}}
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %acc = tile.compute %a : !tile.tile<64x16xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_kind(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{of input 0 must be of kind dense (it is read at the block's coordinates), got gathered}}
          %a = tile.load input 0 gathered via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_sorted(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{of input 0 must not be 'sorted': only the rows of a task with a matrix per row's key are read in sorted segments}}
          %a = tile.load input 0 dense sorted via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_path(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          // expected-error @below {{of input 0 must go via shared in a kernel on CUDA cores, got async}}
          %a = tile.load input 0 dense via async : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_path_mma(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          // expected-error @below {{of input 1 must go via async in a kernel on mma.sync, got tma}}
          %b = tile.load input 1 dense via tma : !tile.tile<16x128xf32>
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @load_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          // expected-error @below {{of input 1 must give !tile.tile<16x64xf32> (its map's axes at the block's extents), got !tile.tile<64x16xf32>}}
          %b = tile.load input 1 dense via shared : !tile.tile<64x16xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<64x16xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// The compute step.
func.func @acc_type(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          // expected-error @below {{must give the block's accumulators !tile.tile<64x64xf32>, got !tile.tile<64x32xf32>}}
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x32xf32>
          tile.store %acc dense : !tile.tile<64x32xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @compute_order(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          // expected-error @below {{takes the loads of all 2 inputs in the order of the task's inputs}}
          %acc = tile.compute %b, %a : !tile.tile<16x64xf32>, !tile.tile<64x16xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @mma_order(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
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
          // expected-error @below {{must multiply the loads of input(s) 0 (i, k) by those of input(s) 1 (k, j), in order}}
          %acc = tile.mma %b x %a tf32x3 : !tile.tile<16x128xf32> x !tile.tile<128x16xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @mma_precision(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
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
          // expected-error @below {{precision bf16 does not take 'f32' operands (input 0; f16: f16, bf16: bf16, f32: tf32 or tf32x3)}}
          %acc = tile.mma %a x %b bf16 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @mma_accumulate(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate max output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          // expected-error @below {{accumulates products by add in f32; the task accumulates 'f32' by max}}
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @store_kind_cuda(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          // expected-error @below {{of output dense must be dense in a kernel on CUDA cores, got staged}}
          tile.store %acc staged : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @store_kind_mma(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
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
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
          // expected-error @below {{of output dense must be staged in a kernel on tensor cores, got scatter}}
          tile.store %acc scatter : !tile.tile<128x128xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @store_acc(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 64] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x64xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<64x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x64xf32>, !tile.tile<64x64xf32> -> !tile.tile<64x64xf32>
          // expected-error @below {{must store the compute step's accumulators}}
          tile.store %b dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @store_spatial(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          // expected-error @below {{takes the loads of the task's 0 spatial-only inputs (with), in order}}
          tile.store %acc dense with %a : !tile.tile<64x64xf32>, !tile.tile<64x16xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// The schedule as a whole.
func.func @suffix(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
        // expected-error @below {{repeats the suffix "_small": kernels of a schedule are named apart}}
        tile.kernel "_small" block [32, 32, 16] thread [2, 2] {
          %a = tile.load input 0 dense via shared : !tile.tile<32x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x32xf32>
          %acc = tile.compute %a, %b : !tile.tile<32x16xf32>, !tile.tile<16x32xf32> -> !tile.tile<32x32xf32>
          tile.store %acc dense : !tile.tile<32x32xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @only_tensor_cores(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @below {{has only tensor-core kernels: a schedule also needs a kernel on CUDA cores (tile.compute), which runs when an operand's rows are not whole 16-byte chunks}}
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
          %acc = tile.mma %a x %b tf32x3 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @yield_value(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
        %z = arith.constant 0.0 : f32
        // expected-error @below {{ends the schedule: it yields no value}}
        tile.yield %z : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @not_kernel(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b
              : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
        // expected-error @below {{is not a tile.kernel; a schedule holds only kernels}}
        %z = arith.constant 0.0 : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @empty(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  // expected-error @below {{has an empty schedule (no tile.kernel)}}
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {

      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#k = affine_map<(i, j, k) -> (k)>

// A task without a (k, j) operand is not a product of two matrices.
func.func @mma_operands(%A: memref<?x?xf32>, %w: memref<?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %w : memref<?x?xf32>, memref<?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #k] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16xf32>
          // expected-error @below {{needs (i, k) and (k, j) operands; the task has 1 and 0}}
          %acc = tile.mma %a x %b tf32 : !tile.tile<128x16xf32> x !tile.tile<16xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#k = affine_map<(i, j, k) -> (k)>

// Three operands indexed by k are not one product.
func.func @mma_third(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %w: memref<?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B, %w : memref<?x?xf32>, memref<?x?xf32>, memref<?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj, #k] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %p = arith.mulf %a, %b : f32
        %q = arith.mulf %p, %c : f32
        tile.yield %q : f32
      } schedule {
        tile.kernel "_mma" block [128, 128, 16] thread [8, 8] stages 4 {
          %a = tile.load input 0 dense via async : !tile.tile<128x16xf32>
          %b = tile.load input 1 dense via async : !tile.tile<16x128xf32>
          %c = tile.load input 2 dense via async : !tile.tile<16xf32>
          // expected-error @below {{multiplies row and column operands, but input 2 is indexed by k alone (it belongs to neither side)}}
          %acc = tile.mma %a x %b tf32 : !tile.tile<128x16xf32> x !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Warpgroup MMA on TMA loads: no gathered rows (they load via threads).
func.func @warpgroup_gather(%h: memref<?xi32>, %A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>) maps [#ik, #kj] accumulate add output dense
      {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 gathered via tma : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via tma : !tile.tile<64x256xf16>
          // expected-error @below {{warpgroup MMA loads whole tiles by TMA, which gathers no rows: gathered operands load via threads}}
          %acc = tile.mma %a x %b f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 gathered via shared : !tile.tile<64x16xf16>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf16>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>

// Segments: the gathered rows of a task with a matrix per row's key are
// read sorted by the key, and the matrix is the block's key's.
func.func @segments_sorted(%h: memref<?xi32>, %E: memref<?x?xf32>, %r: memref<?xi32>,
                           %W: memref<?x?x?xf32>, %Y: memref<?x?xf32>) {
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>) outs(%Y : memref<?x?xf32>)
      gathers(%h, %r : memref<?xi32>, memref<?xi32>) maps [#ik, #ikj]
      accumulate add output dense {gathered = [[0, 0], [1, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32):
        %p = arith.mulf %e, %w : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [16, 128, 8] thread [2, 4] {
          // expected-error @below {{of input 0 must be 'sorted': the task has a matrix per row's key, so its rows are read in segments sorted by the key}}
          %e = tile.load input 0 gathered via shared : !tile.tile<16x8xf32>
          %w = tile.load input 1 per_key via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %e, %w : !tile.tile<16x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<16x128xf32>
          tile.store %acc dense : !tile.tile<16x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#ikj = affine_map<(i, j, k) -> (i, k, j)>

func.func @segments_per_key(%h: memref<?xi32>, %E: memref<?x?xf32>, %r: memref<?xi32>,
                            %W: memref<?x?x?xf32>, %Y: memref<?x?xf32>) {
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
          // expected-error @below {{of input 1 must be of kind per_key (it is indexed by i, j and k: a matrix per key), got gathered}}
          %w = tile.load input 1 gathered via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %e, %w : !tile.tile<16x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<16x128xf32>
          tile.store %acc dense : !tile.tile<16x128xf32>
        }
      }
  return
}

// -----

// The iterators live in a kernel, kernels in a task's schedule.
func.func @kernel_parent() {
  // expected-error @below {{expects parent op 'tile.task'}}
  tile.kernel "" block [64, 64, 16] thread [4, 4] {
  }
  return
}

// -----

func.func @load_parent() {
  // expected-error @below {{expects parent op 'tile.kernel'}}
  %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>

// A join lets a block skip its reduction: its cluster's partners would wait
// for its multicasts forever.
func.func @joined_cluster(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %ka: memref<?xi32>,
                          %kb: memref<?xi32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B, %ka, %kb : memref<?x?xf16>, memref<?x?xf16>, memref<?xi32>, memref<?xi32>)
      outs(%C : memref<?x?xf32>) maps [#ik, #kj, #i, #j] accumulate add output dense
      when {
      ^bb0(%i: index, %j: index, %a: i32, %b: i32):
        %same = arith.cmpi eq, %a, %b : i32
        tile.yield %same : i1
      }
      inner {
      ^bb0(%a: f16, %b: f16, %x: i32, %y: i32):
        %wa = arith.extf %a : f16 to f32
        %wb = arith.extf %b : f16 to f32
        %v = arith.mulf %wa, %wb : f32
        tile.yield %v : f32
      } schedule {
        // expected-error @below {{runs clusters of 2 blocks, but the task's join may let a block skip its reduction while its partners wait for its multicasts: a joined task takes cluster_m 1}}
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 2 {
          %x = tile.load input 2 dense via registers : !tile.tile<128xi32>
          %a = tile.load input 0 dense via tma : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via tma : !tile.tile<64x256xf16>
          %y = tile.load input 3 dense via registers : !tile.tile<256xi32>
          %acc = tile.mma %a x %b f16 warpgroup
              : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
          tile.store %acc dense with %x, %y : !tile.tile<128x256xf32>, !tile.tile<128xi32>, !tile.tile<256xi32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Transposed copies: the operands of warpgroup MMA at tf32 stored with k outermost.
func.func @must_transpose(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 {
          %a = tile.load input 0 dense via tma : !tile.tile<128x32xf32>
          // expected-error @below {{of input 1 must be 'transposed': warpgroup MMA reads tf32 operands k-major, and this input's innermost dimension is not k}}
          %b = tile.load input 1 dense via tma : !tile.tile<32x256xf32>
          %acc = tile.mma %a x %b tf32 warpgroup : !tile.tile<128x32xf32> x !tile.tile<32x256xf32> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
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

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

func.func @must_not_transpose(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          // expected-error @below {{of input 1 must not be 'transposed': only operands of warpgroup MMA at tf32 whose innermost dimension is not k are read from a transposed copy}}
          %b = tile.load input 1 dense transposed via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// A product form multiplies the tiles of all its row operands (here h and
// r) by those of its column operands; leaving one out is an error.
func.func @mma_missing_row(%H: memref<?x?xf32>, %R: memref<?x?xf32>, %T: memref<?x?xf32>, %C: memref<?x?xf32>) {
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
          // expected-error @below {{must multiply the loads of input(s) 0, 1 (i, k) by those of input(s) 2 (k, j), in order}}
          %acc = tile.mma %h x %t tf32 : !tile.tile<128x16xf32> x !tile.tile<128x16xf32> -> !tile.tile<128x128xf32>
          tile.store %acc staged : !tile.tile<128x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Reduce's store iterator combines the rows of mma.sync fragments or of
// CUDA-core threads: no warpgroup MMA before it.
func.func @warpgroup_reduce(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %S: memref<?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%S : memref<?xf32>)
      maps [#ik, #kj] accumulate add output reduce
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 dense via tma : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via tma : !tile.tile<64x256xf16>
          // expected-error @below {{on warpgroup MMA cannot feed output reduce: its store iterator combines the rows of mma.sync fragments or of CUDA-core threads}}
          %acc = tile.mma %a x %b f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
          tile.store %acc reduce : !tile.tile<128x256xf32>
        }
        tile.kernel "" block [64, 64, 16] thread [4, 4] {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf16>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf16>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
          tile.store %acc reduce : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
func.func @split_k_store(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{splits the reduction, which takes a dense output with 'update', accumulate add, max or min and no project or when region (blocks combine partial results into the output)}}
        tile.kernel "" block [64, 64, 16] thread [4, 4] split_k {
          %a = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
          %acc = tile.compute %a, %b : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc dense : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

func.func @per_key_on_tensor_cores(%x: memref<?x?xf32>, %g: memref<?x?xf32>, %t: memref<?xi32>,
                                   %dW: memref<?x?x?xf32>) {
  tile.task ins(%x, %g : memref<?x?xf32>, memref<?x?xf32>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [64, 64, 16] thread [4, 4] stages 4 {
          %a = tile.load input 0 dense sorted via async : !tile.tile<64x16xf32>
          %b = tile.load input 1 dense sorted via async : !tile.tile<16x64xf32>
          // expected-error @below {{feeds output per_key, whose steps are read through the sorted order, but input 0 is stored k-contiguous (the tensor cores' 16-byte copies would mix steps): on tensor cores its operands are stored along i or j}}
          %acc = tile.mma %a x %b tf32 : !tile.tile<64x16xf32> x !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
          tile.store %acc per_key : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

func.func @per_key_on_warpgroup_mma(%x: memref<?x?xf16>, %g: memref<?x?xf16>, %t: memref<?xi32>,
                                    %dW: memref<?x?x?xf32>) {
  tile.task ins(%x, %g : memref<?x?xf16>, memref<?x?xf16>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key
      inner {
      ^bb0(%a: f16, %b: f16):
        %wa = arith.extf %a : f16 to f32
        %wb = arith.extf %b : f16 to f32
        %p = arith.mulf %wa, %wb : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 dense sorted via tma : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense sorted via tma : !tile.tile<64x256xf16>
          // expected-error @below {{on warpgroup MMA cannot feed output per_key: the segments of the reduction read each step's row through the sorted order (mma.sync does)}}
          %acc = tile.mma %a x %b f16 warpgroup
              : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
          tile.store %acc per_key : !tile.tile<128x256xf32>
        }
      }
  return
}

// -----

func.func @per_key_on_tensor_cores_f16(%x: memref<?x?xf16>, %g: memref<?x?xf16>,
                                       %t: memref<?xi32>, %dW: memref<?x?x?xf32>) {
  tile.task ins(%x, %g : memref<?x?xf16>, memref<?x?xf16>) keys(%t : memref<?xi32>)
      outs(%dW : memref<?x?x?xf32>)
      maps [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output per_key
      inner {
      ^bb0(%a: f16, %b: f16):
        %wa = arith.extf %a : f16 to f32
        %wb = arith.extf %b : f16 to f32
        %p = arith.mulf %wa, %wb : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_mma" block [64, 64, 32] thread [4, 8] stages 4 {
          %a = tile.load input 0 dense sorted via async : !tile.tile<32x64xf16>
          %b = tile.load input 1 dense sorted via async : !tile.tile<32x64xf16>
          // expected-error @below {{feeds output per_key on tensor cores at f16: the segments of the reduction take tf32 or tf32x3 (16-bit operands run on CUDA cores)}}
          %acc = tile.mma %a x %b f16 : !tile.tile<32x64xf16> x !tile.tile<32x64xf16> -> !tile.tile<64x64xf32>
          tile.store %acc per_key : !tile.tile<64x64xf32>
        }
      }
  return
}

// -----

func.func @split_k_segments(%E: memref<?x?xf32>, %W: memref<?x?x?xf32>, %r: memref<?xi32>,
                            %Y: memref<?x?xf32>) {
  tile.task ins(%E, %W : memref<?x?xf32>, memref<?x?x?xf32>) outs(%Y : memref<?x?xf32>)
      gathers(%r : memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k, j)>]
      accumulate add output dense {gathered = [[1, 0]], update}
      inner {
      ^bb0(%e: f32, %w: f32):
        %p = arith.mulf %e, %w : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{splits the reduction, but its task has a matrix per row's key (segment iterators take whole reductions)}}
        tile.kernel "" block [16, 128, 8] thread [2, 4] split_k {
          %e = tile.load input 0 dense sorted via shared : !tile.tile<16x8xf32>
          %w = tile.load input 1 per_key via shared : !tile.tile<8x128xf32>
          %acc = tile.compute %e, %w : !tile.tile<16x8xf32>, !tile.tile<8x128xf32> -> !tile.tile<16x128xf32>
          tile.store %acc update : !tile.tile<16x128xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// Loads via threads read 16-byte chunks along k: B stored k-outermost.
func.func @threads_not_k_contiguous(%h: memref<?xi32>, %A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>) maps [#ik, #kj] accumulate add output dense
      {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 gathered via threads : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via threads : !tile.tile<64x256xf16>
          // expected-error @below {{on warpgroup MMA loads via threads, which read 16-byte chunks along k, but input 1 is not stored k-contiguous}}
          %acc = tile.mma %a x %b f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<64x256xf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// One load via threads makes the kernel's stages the threads': every
// operand loads so.
func.func @threads_and_tma(%h: memref<?xi32>, %A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>) maps [#ik, #jk] accumulate add output dense
      {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 {
          %a = tile.load input 0 gathered via threads : !tile.tile<128x64xf16>
          // expected-error @below {{of input 1 must go via threads in a kernel on warpgroup MMA whose stages threads write, got tma}}
          %b = tile.load input 1 dense via tma : !tile.tile<256x64xf16>
          %acc = tile.mma %a x %b f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<256x64xf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Clusters share the B tile by TMA multicast; threads write their own.
func.func @threads_cluster(%h: memref<?xi32>, %A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>) maps [#ik, #jk] accumulate add output dense
      {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f16, %b: f16):
        %x = arith.extf %a : f16 to f32
        %y = arith.extf %b : f16 to f32
        %p = arith.mulf %x, %y : f32
        tile.yield %p : f32
      } schedule {
        // expected-error @below {{runs clusters of 2 blocks, which share the B tile by TMA multicast; its stages are written by threads: cluster_m 1}}
        tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 cluster_m 2 {
          %a = tile.load input 0 gathered via threads : !tile.tile<128x64xf16>
          %b = tile.load input 1 dense via threads : !tile.tile<256x64xf16>
          %acc = tile.mma %a x %b f16 warpgroup : !tile.tile<128x64xf16> x !tile.tile<256x64xf16> -> !tile.tile<128x256xf32>
          tile.store %acc staged : !tile.tile<128x256xf32>
        }
      }
  return
}
