// RUN: kge-opt %s --split-input-file --tile-schedule="matrix-math=tf32" | FileCheck %s --check-prefix=SCHED
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=tf32" | FileCheck %s

// Warpgroup MMA on stages the producer threads write: rows gathered
// through index arrays and product forms of computed factors, every
// operand stored k-contiguous. A producer warpgroup (threads 256-383)
// reads 16-byte chunks of the rows, computes each term's factors, writes
// them into the 128-byte swizzled stages wgmma reads, fences them for the
// asynchronous proxy and arrives on the stage's full barrier (128
// arrivals); the two consumer warpgroups multiply as on TMA loads.

// DistMult's (h * r) . t over gathered rows at tf32: one term.
// SCHED-LABEL: func.func @distmult
// SCHED: tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 min_k 128 {
// SCHED-NEXT: tile.load input 0 gathered via threads : !tile.tile<128x32xf32>
// SCHED-NEXT: tile.load input 1 gathered via threads : !tile.tile<128x32xf32>
// SCHED-NEXT: tile.load input 2 gathered via threads : !tile.tile<256x32xf32>
// SCHED-NEXT: tile.mma %0, %1 x %2 tf32 warpgroup
// SCHED: tile.kernel "_mma" block [128, 128, 16]
// The launch plan: 384 threads, no tensor maps; the kernel for rows of
// 16-byte chunks from K = 128, where its grid has blocks for 15/16 of the
// multiprocessors (124 of 132).
// CHECK-LABEL: gpu.module @distmult_kernels
// CHECK-SAME: block = ["384", "1", "1"], function = "distmult_wgmma", grid = ["ceildiv(N, 256)", "ceildiv(M, 128)", "1"], kind = "kernel", module = "distmult_kernels", shared_bytes = "197632", when = "(1 - min(1, K - K / 4 * 4)) * min(1, ceildiv(N, 256) * ceildiv(M, 128) * 16 / 1980) * min(1, K / 128)"
// CHECK-NOT: tensormap
// CHECK: gpu.func @distmult_wgmma({{.*}}) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
// Full barriers: 128 arrivals (the producer threads); empty ones: 2 (the
// consumer warpgroups).
// CHECK: nvgpu.mbarrier.init %{{.*}}, %[[P:.*]] :
// CHECK: nvgpu.mbarrier.init %{{.*}}, %[[C:.*]] :
// The consumers: four wgmma m64n256k8 a step of 32.
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-COUNT-4: nvvm.wgmma.mma_async
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// The producer: a step waits for its stage, copies the tails' chunks as
// stored (cp.async, 16 bytes, zero-filled past K, through the gather t),
// reads the rows' chunks of h and r (through their gathers) into
// registers, multiplies them, rounds to TF32 (to nearest: cvt.rna) and
// writes the stage; then waits for its copies.
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: memref.load %arg4
// CHECK: nvgpu.device_async_copy %arg0[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}], 4, %{{.*}} {bypassL1}
// CHECK: memref.load %arg2
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: nvvm.convert.float.to.tf32 %{{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<49408xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// The step past K reads element by element (zero past K).
// CHECK: } else {
// CHECK: memref.load %arg0
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK-NOT: nvgpu.mbarrier.arrive
// CHECK: gpu.func @distmult_mma(
func.func @distmult(%E: memref<?x?xf32> {kge.param = "E"}, %R: memref<?x?xf32> {kge.param = "R"},
                    %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                    %t: memref<?xi32> {kge.param = "t"}, %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%E, %R, %E : memref<?x?xf32>, memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      gathers(%h, %r, %t : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: f32, %w: f32, %x: f32):
        %hr = arith.mulf %e, %w : f32
        %s = arith.mulf %hr, %x : f32
        tile.yield %s : f32
      }
  return
}

// -----

// TransE's squared distance on bf16 rows: three terms (||h + r||^2 . 1,
// -2 (h + r) . t, 1 . ||t||^2), each a stage of its own: a step of k is
// three stages, the producer's writes fenced once and its three stages
// marked full; steps of 64 bf16 (128-byte rows), four wgmma k16 a stage.
// SCHED-LABEL: func.func @transe
// SCHED: tile.kernel "_wgmma" block [128, 256, 64] thread [2, 64] stages 4 min_k 128 {
// SCHED-COUNT-3: gathered via threads
// CHECK-LABEL: gpu.module @transe_kernels
// CHECK: gpu.func @transe_wgmma(
// CHECK: %[[STEPS:.*]] = arith.muli %{{.*}}, %c3{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[STEPS]]
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK: nvvm.fence.proxy
// CHECK-COUNT-3: nvgpu.mbarrier.arrive
// CHECK-NOT: nvgpu.mbarrier.arrive
// CHECK: gpu.func @transe_mma(
func.func @transe(%E: memref<?x?xbf16> {kge.param = "E"}, %R: memref<?x?xbf16> {kge.param = "R"},
                  %h: memref<?xi32> {kge.param = "h"}, %r: memref<?xi32> {kge.param = "r"},
                  %t: memref<?xi32> {kge.param = "t"}, %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%E, %R, %E : memref<?x?xbf16>, memref<?x?xbf16>, memref<?x?xbf16>) outs(%C : memref<?x?xf32>)
      gathers(%h, %r, %t : memref<?xi32>, memref<?xi32>, memref<?xi32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (i, k)>,
            affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
      inner {
      ^bb0(%e: bf16, %w: bf16, %x: bf16):
        %ew = arith.extf %e : bf16 to f32
        %ww = arith.extf %w : bf16 to f32
        %xw = arith.extf %x : bf16 to f32
        %hr = arith.addf %ew, %ww : f32
        %d = arith.subf %hr, %xw : f32
        %s = arith.mulf %d, %d : f32
        tile.yield %s : f32
      }
  return
}

// -----

// A factor that is not zero where its operands are ((u + 1) . w): past K
// the producer writes it as zero (a select on the step past K only).
// CHECK-LABEL: gpu.module @shifted_kernels
// CHECK: gpu.func @shifted_wgmma(
// CHECK: } else {
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.select
// CHECK: nvvm.fence.proxy
func.func @shifted(%U: memref<?x?xf32> {kge.param = "U"}, %W: memref<?x?xf32> {kge.param = "W"},
                   %S: memref<?x?xf32> {kge.param = "S"}) {
  tile.task ins(%U, %W : memref<?x?xf32>, memref<?x?xf32>) outs(%S : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense
      inner {
      ^bb0(%u: f32, %w: f32):
        %one = arith.constant 1.0 : f32
        %a = arith.addf %u, %one : f32
        %s = arith.mulf %a, %w : f32
        tile.yield %s : f32
      }
  return
}

// -----

// Plain products whose operands are not gathered keep TMA loads; a
// gathered one stored k-outermost (its rows are no 16-byte chunks along k)
// takes mma.sync.
// SCHED-LABEL: func.func @gemm_nt
// SCHED: tile.kernel "_wgmma" block [128, 256, 32] thread [2, 64] stages 4 cluster_m 2 min_k 1024 {
// SCHED: via tma
// SCHED-LABEL: func.func @gathered_kn
// SCHED-NOT: _wgmma
// SCHED: tile.kernel "_mma"
func.func @gemm_nt(%A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (j, k)>]
      accumulate add output dense
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}

// -----

func.func @gathered_kn(%h: memref<?xi32>, %A: memref<?x?xf32>, %B: memref<?x?xf32>, %C: memref<?x?xf32>) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      gathers(%h : memref<?xi32>) maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
      accumulate add output dense {gathered = [[0, 0]]}
      inner {
      ^bb0(%a: f32, %b: f32):
        %p = arith.mulf %a, %b : f32
        tile.yield %p : f32
      }
  return
}
