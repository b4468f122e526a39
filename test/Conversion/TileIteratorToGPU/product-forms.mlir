// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
// RUN: kge-opt %s --split-input-file --tile-schedule | FileCheck %s --check-prefix=SCHED
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=tf32" \
// RUN:   | FileCheck %s --check-prefix=TF32

// Product forms: inner computations that are sums of terms row(i, k) *
// col(j, k), each factor an expression of one side's operands, run on
// tensor cores: the load iterators stage every operand's tile, the warps
// compute each term's factors from their fragments and multiply them (one
// mma.sync per term, fragment pair and step).

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// DistMult's (h * r) . t: two row operands, one column operand; one term.
// Warpgroup MMA on stages the producer threads write (h * r computed by
// them) from K = 128; on mma.sync, stages of three tiles (128 x 128 x 32
// f16: 3 x 8 KB, four stages), two blocks a multiprocessor.
// SCHED-LABEL: func.func @distmult_f16
// SCHED: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 min_k 128 {
// SCHED-COUNT-3: via threads
// SCHED: tile.mma %0, %1 x %2 f16 warpgroup
// SCHED: tile.kernel "_mma" block [128, 128, 32] thread [8, 8] stages 4 {
// SCHED: tile.mma %0, %1 x %2 f16 : !tile.tile<128x32xf16>, !tile.tile<128x32xf16> x !tile.tile<128x32xf16> -> !tile.tile<128x128xf32>
// SCHED: tile.kernel "_mma_small" block [64, 64, 32] thread [4, 8] stages 4 {
// SCHED: tile.kernel "_small" block [64, 64, 16] thread [4, 4] {
// CHECK-LABEL: gpu.module @distmult_f16_kernels
// CHECK-SAME: function = "distmult_f16_mma", {{[^}]*}} shared_bytes = "98304"
// CHECK-SAME: function = "distmult_f16_mma_small", {{[^}]*}} shared_bytes = "49152"
// CHECK-SAME: function = "distmult_f16_small", {{[^}]*}} shared_bytes = "0"
// CHECK: gpu.func @distmult_f16_mma({{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.minctasm = 2 : i32}
// Three tiles of 128 x 32 f16 a stage, two 16-byte copies a thread each:
// three stages ahead, then one a step.
// CHECK-COUNT-18: nvgpu.device_async_copy
// CHECK: scf.for
// CHECK-COUNT-6: nvgpu.device_async_copy
// CHECK-COUNT-4: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : {{.*}} -> vector<4x2xf16>
// The factor h * r, element by element in f32 (as the inner computation
// widens), rounded to f16 for the product.
// CHECK: %[[H:.*]] = vector.extract %{{.*}}[0, 0] : f16 from vector<4x2xf16>
// CHECK: %[[R:.*]] = vector.extract %{{.*}}[0, 0] : f16 from vector<4x2xf16>
// CHECK: %[[HW:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK: %[[RW:.*]] = arith.extf %[[R]] : f16 to f32
// CHECK: %[[HR:.*]] = arith.mulf %[[HW]], %[[RW]] fastmath<contract> : f32
// CHECK: arith.truncf %[[HR]] : f32 to f16
// Sixteen products a step of 16, two steps a stage.
// CHECK-COUNT-32: nvgpu.mma.sync
// CHECK-NOT: nvgpu.mma.sync
// CHECK: scf.yield
func.func @distmult_f16(%H: memref<?x?xf16>, %R: memref<?x?xf16>, %T: memref<?x?xf16>, %S: memref<?x?xf32>) {
  tile.task ins(%H, %R, %T : memref<?x?xf16>, memref<?x?xf16>, memref<?x?xf16>) outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%h: f16, %r: f16, %t: f16):
        %hw = arith.extf %h : f16 to f32
        %rw = arith.extf %r : f16 to f32
        %tw = arith.extf %t : f16 to f32
        %hr = arith.mulf %hw, %rw : f32
        %p = arith.mulf %hr, %tw : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>
#kj = affine_map<(i, j, k) -> (k, j)>

// ComplEx's Re(<a + ib, c + id, x - iy>) written as four products: terms
// that share a column factor merge (x: ac - bd, y: ad + cb), two products
// a step. Six tiles a stage (192 KB in four): one block a multiprocessor.
// The column operand y stored k-outermost is read by transposed ldmatrix.
// CHECK-LABEL: gpu.module @complex_bf16_kernels
// CHECK-SAME: function = "complex_bf16_mma", {{[^}]*}} shared_bytes = "196608"
// CHECK: gpu.func @complex_bf16_mma({{.*}} kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
// CHECK: scf.for
// CHECK-COUNT-16: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK-COUNT-2: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-COUNT-20: nvgpu.ldmatrix
// CHECK-COUNT-32: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: scf.yield
func.func @complex_bf16(%A: memref<?x?xbf16>, %B: memref<?x?xbf16>, %C: memref<?x?xbf16>, %D: memref<?x?xbf16>,
                        %X: memref<?x?xbf16>, %Y: memref<?x?xbf16>, %S: memref<?x?xf32>) {
  tile.task ins(%A, %B, %C, %D, %X, %Y : memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>) outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #ik, #ik, #jk, #kj] accumulate add output dense
      inner {
      ^bb0(%a: bf16, %b: bf16, %c: bf16, %d: bf16, %x: bf16, %y: bf16):
        %aw = arith.extf %a : bf16 to f32
        %bw = arith.extf %b : bf16 to f32
        %cw = arith.extf %c : bf16 to f32
        %dw = arith.extf %d : bf16 to f32
        %xw = arith.extf %x : bf16 to f32
        %yw = arith.extf %y : bf16 to f32
        %ac = arith.mulf %aw, %cw : f32
        %acx = arith.mulf %ac, %xw : f32
        %bd = arith.mulf %bw, %dw : f32
        %bdx = arith.mulf %bd, %xw : f32
        %re = arith.subf %acx, %bdx : f32
        %ad = arith.mulf %aw, %dw : f32
        %ady = arith.mulf %ad, %yw : f32
        %cb = arith.mulf %cw, %bw : f32
        %cby = arith.mulf %yw, %cb : f32
        %im = arith.addf %ady, %cby : f32
        %s = arith.addf %re, %im : f32
        tile.yield %s : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// f32 operands at tf32: a factor of any elementwise operations of one side
// (here 2 * exp(u) - v over the rows, w * w over the columns), a term
// scaled by a constant. The product is (2 exp(u) - v) . (0.5 w^2).
// TF32-LABEL: gpu.module @factors_kernels
// TF32: gpu.func @factors_mma(
// TF32: scf.for
// TF32: math.exp
// TF32: arith.subf
// TF32: nvgpu.mma.sync
// Without tf32, f32 operands stay on CUDA cores.
// CHECK-LABEL: gpu.module @factors_kernels
// CHECK-NOT: _mma
// CHECK: gpu.func @factors(
func.func @factors(%U: memref<?x?xf32>, %V: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %V, %W : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %v: f32, %w: f32):
        %two = arith.constant 2.0 : f32
        %half = arith.constant 0.5 : f32
        %e = math.exp %u : f32
        %e2 = arith.mulf %two, %e : f32
        %a = arith.subf %e2, %v : f32
        %ww = arith.mulf %w, %w : f32
        %p = arith.mulf %a, %ww : f32
        %q = arith.mulf %p, %half : f32
        tile.yield %q : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Polynomials in the two sides are product forms: a term plus a value of
// the rows alone (u . w + sum u: terms (u, w) and (u, 1), which share
// their row factor and merge into u . (w + 1), one product), and a square
// of a sum across the sides ((u - w) . (u - w) = sum u^2 - 2 u . w + sum
// w^2: three terms, the first and last multiplying a fragment of ones; one
// mma.sync per term, fragment pair and step).
// TF32-LABEL: gpu.module @row_term_kernels
// TF32: gpu.func @row_term_mma(
// TF32: scf.for
// TF32: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// TF32: arith.addf %{{.*}}, %[[ONE]] fastmath<contract> : f32
// TF32-COUNT-32: nvgpu.mma.sync
// TF32-NOT: nvgpu.mma.sync
// TF32: scf.yield
// TF32-LABEL: gpu.module @across_kernels
// TF32: gpu.func @across_mma(
// TF32: scf.for
// Each term has a factor that is zero where its operands are (u^2, 2u,
// -w, w^2): the stages' zero fill past K zeroes the terms, no mask.
// TF32-NOT: arith.select {{.*}} : f32
// TF32-COUNT-96: nvgpu.mma.sync
// TF32-NOT: nvgpu.mma.sync
// TF32: scf.yield
func.func @row_term(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %p = arith.mulf %u, %w : f32
        %q = arith.addf %p, %u : f32
        tile.yield %q : f32
      }
  return
}

func.func @across(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %s = arith.subf %u, %w : f32
        %q = arith.mulf %s, %s : f32
        tile.yield %q : f32
      }
  return
}

// (u + 1) . (w + 1): neither factor is zero where its operands are, so the
// step that reaches past K masks the column factor there (a uniform
// branch; full steps take the unmasked one).
// TF32-LABEL: gpu.module @shifted_kernels
// TF32: gpu.func @shifted_mma(
// TF32: scf.for
// TF32: scf.if %{{.*}} -> (vector<2x1xf32>)
// TF32: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// TF32: } else {
// TF32-NOT: arith.select
// TF32: scf.yield
// TF32: nvgpu.mma.sync
func.func @shifted(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %one = arith.constant 1.0 : f32
        %a = arith.addf %u, %one : f32
        %b = arith.addf %w, %one : f32
        %q = arith.mulf %a, %b : f32
        tile.yield %q : f32
      }
  return
}

// Not product forms: an operation other than the field's on values of
// both sides (max(u, w), exp(u * w)), and a sum of one side alone; they
// run on CUDA cores only.
// TF32-LABEL: gpu.module @maximum_kernels
// TF32-NOT: _mma
// TF32: gpu.func @maximum(
// TF32-LABEL: gpu.module @exp_product_kernels
// TF32-NOT: _mma
// TF32: gpu.func @exp_product(
// TF32-LABEL: gpu.module @one_side_kernels
// TF32-NOT: _mma
// TF32: gpu.func @one_side(
func.func @maximum(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %q = arith.maximumf %u, %w : f32
        tile.yield %q : f32
      }
  return
}

func.func @exp_product(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %p = arith.mulf %u, %w : f32
        %q = math.exp %p : f32
        tile.yield %q : f32
      }
  return
}

func.func @one_side(%U: memref<?x?xf32>, %W: memref<?x?xf32>, %S: memref<?x?xf32>) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %q = arith.mulf %u, %u : f32
        tile.yield %q : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Eight row operands: a 128 x 128 stage is 72 KB, two stages of it fit
// the 200 KB the pipeline takes; 64 x 64 ones keep four.
// SCHED-LABEL: func.func @many
// SCHED: tile.kernel "_mma" block [128, 128, 32] thread [8, 8] stages 2 {
// SCHED: tile.kernel "_mma_small" block [64, 64, 32] thread [4, 8] stages 4 {
// CHECK-LABEL: gpu.module @many_kernels
// CHECK-SAME: function = "many_mma", {{[^}]*}} shared_bytes = "147456"
// CHECK-SAME: function = "many_mma_small", {{[^}]*}} shared_bytes = "147456"
func.func @many(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf16>, %D: memref<?x?xf16>,
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
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// A row operand the inner computation does not read: mma.sync stages its
// tile all the same; the warpgroup kernel's producer threads read only the
// operands the factors read (A and B, each a factor as stored: copied).
// CHECK-LABEL: gpu.module @unused_row_kernels
// CHECK: gpu.func @unused_row_wgmma(%[[A:.*]]: memref<?x?xbf16>, %[[U:.*]]: memref<?x?xbf16>, %[[B:.*]]: memref<?x?xbf16>,
// CHECK-NOT: %[[U]][
// CHECK: nvgpu.device_async_copy %[[A]][
// CHECK-NOT: %[[U]][
// CHECK: nvgpu.device_async_copy %[[B]][
// CHECK-NOT: %[[U]][
// CHECK: gpu.func @unused_row_mma(
func.func @unused_row(%A: memref<?x?xbf16>, %U: memref<?x?xbf16>, %B: memref<?x?xbf16>, %S: memref<?x?xf32>) {
  tile.task ins(%A, %U, %B : memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>) outs(%S : memref<?x?xf32>)
      maps [#ik, #ik, #jk] accumulate add output dense
      inner {
      ^bb0(%a: bf16, %u: bf16, %b: bf16):
        %aw = arith.extf %a : bf16 to f32
        %bw = arith.extf %b : bf16 to f32
        %p = arith.mulf %aw, %bw : f32
        tile.yield %p : f32
      }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Factors are computed in the operands' types and f32: a product in f64
// stays on CUDA cores.
// CHECK-LABEL: gpu.module @in_f64_kernels
// CHECK-NOT: _mma
// CHECK: gpu.func @in_f64(
func.func @in_f64(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %S: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%S : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense
      inner {
      ^bb0(%a: f16, %b: f16):
        %aw = arith.extf %a : f16 to f64
        %bw = arith.extf %b : f16 to f64
        %p = arith.mulf %aw, %bw : f64
        %q = arith.truncf %p : f64 to f32
        tile.yield %q : f32
      }
  return
}
