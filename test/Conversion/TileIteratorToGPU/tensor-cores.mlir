// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=tf32x3" \
// RUN:   | FileCheck %s --check-prefix=X3
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=tf32" \
// RUN:   | FileCheck %s --check-prefix=TF32
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="warpgroup=false" \
// RUN:   | FileCheck %s --check-prefix=SYNC
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=fma" \
// RUN:   | FileCheck %s --check-prefix=FMA
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="cluster-m=1" \
// RUN:   | FileCheck %s --check-prefix=NOCLUSTER
// RUN: not kge-opt %s --split-input-file --convert-tile-to-gpu="cluster-m=3" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BADCLUSTER
// RUN: not kge-opt %s --split-input-file --convert-tile-to-gpu="matrix-math=tf64" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BAD

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#jk = affine_map<(i, j, k) -> (j, k)>

// FP16 GEMM: warpgroup MMA when the grid fills the GPU and K >= 1024,
// mma.sync on 128 x 128 tiles when that grid does, on 64 x 64 tiles
// otherwise, a CUDA-core kernel when rows are not 16-byte multiples.
// CHECK-LABEL: gpu.module @gemm_f16_kernels
// CHECK-SAME: {box = [128, 64], buffer = "param:A", kind = "tensormap"}, {box = [64, 64], buffer = "param:B", kind = "tensormap"}], block = ["288", "1", "1"], function = "gemm_f16_wgmma", grid = ["ceildiv(N, 256)", "2 * ceildiv(M, 256)", "1"], kind = "kernel", module = "gemm_f16_kernels", shared_bytes = "197632", when = "(1 - min(1, K - K / 8 * 8)) * (1 - min(1, N - N / 8 * 8)) * min(1, ceildiv(N, 256) * ceildiv(M, 128) / 132) * min(1, K / 1024)"
// CHECK-SAME: function = "gemm_f16_mma", grid = ["ceildiv(N, 128)", "ceildiv(M, 128)", "1"], kind = "kernel", module = "gemm_f16_kernels", shared_bytes = "65536", when = "(1 - min(1, K - K / 8 * 8)) * (1 - min(1, N - N / 8 * 8)) * (1 - min(1, min(1, ceildiv(N, 256) * ceildiv(M, 128) / 132) * min(1, K / 1024))) * ceildiv(N, 128) * ceildiv(M, 128) / 132"
// CHECK-SAME: function = "gemm_f16_mma_small", grid = ["ceildiv(N, 64)", "ceildiv(M, 64)", "1"], kind = "kernel", module = "gemm_f16_kernels", shared_bytes = "32768", when = "(1 - min(1, K - K / 8 * 8)) * (1 - min(1, N - N / 8 * 8)) * (1 - min(1, min(1, ceildiv(N, 256) * ceildiv(M, 128) / 132) * min(1, K / 1024))) * (1 - min(1, ceildiv(N, 128) * ceildiv(M, 128) / 132))"
// CHECK-SAME: function = "gemm_f16_small", grid = ["ceildiv(N, 64)", "min(ceildiv(M, 64), 65535)", "ceildiv(ceildiv(M, 64), 65535)"], kind = "kernel", module = "gemm_f16_kernels", shared_bytes = "0", when = "1 - (1 - min(1, K - K / 8 * 8)) * (1 - min(1, N - N / 8 * 8))"
// The warpgroup kernel: its operands' tensor maps follow the arguments; a
// producer warp loads stages by TMA (A in one 128 x 64 box, B, stored
// n-contiguous, in 64 x 64 boxes) under full/empty mbarriers, the two
// consumer warpgroups wait, multiply by descriptors (one group in flight)
// and release. Blocks pair up in clusters along M (whole clusters in the
// grid): each loads two of B's four boxes, multicast to both, and a stage is
// free once the consumers of both blocks released it (empty barriers of
// four arrivals, released in both blocks through mapa).
// CHECK: gpu.func @gemm_f16_wgmma({{.*}}, %[[MAPA:.*]]: !llvm.ptr, %[[MAPB:.*]]: !llvm.ptr) kernel attributes {kge.grid_constants = 2 : i32, known_block_size = array<i32: 288, 1, 1>, nvvm.cluster_dim = array<i32: 1, 2, 1>}
// CHECK: gpu.dynamic_shared_memory
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[RANK:.*]] = gpu.cluster_block_id  y
// CHECK: %[[BARS:[0-9]+]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 8>
// CHECK: nvgpu.mbarrier.init %[[BARS]][%{{.*}}], %c1
// CHECK: nvgpu.mbarrier.init %[[BARS]][%{{.*}}], %c4
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// The role (consumer or producer) is the warp's index read from lane 0 by
// a shuffle that ptxas sees, so that it knows the branch warp-uniform.
// CHECK: %[[WARP:.*]] = llvm.inline_asm asm_dialect = att "shfl.sync.idx.b32 $0, $1, 0, 31, -1;", "=r,r"
// CHECK: %[[CONSUMER:.*]] = arith.cmpi ult, %[[WARP]], %c8_i32
// CHECK: scf.if %[[CONSUMER]] -> (!llvm.struct<(f32
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]]
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <row>], B[<f16>, <one>, <row>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvgpu.mbarrier.get %[[BARS]]
// CHECK: llvm.inline_asm has_side_effects {{.*}}mapa.shared::cluster.u32 remote, $0, $1;\0Ambarrier.arrive.shared::cluster.b64 _, [remote];{{.*}} %c0_i32
// CHECK: llvm.inline_asm has_side_effects {{.*}}mapa.shared::cluster.u32 {{.*}} %c1_i32
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: } else {
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%{{.*}}], %c49152
// CHECK: builtin.unrealized_conversion_cast %[[MAPA]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<128x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_128b, oob = zero, interleave = none>
// CHECK: nvgpu.tma.async.load
// CHECK: builtin.unrealized_conversion_cast %[[MAPB]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xf16
// CHECK: arith.cmpi eq, %[[RANK]], %c0
// CHECK: nvgpu.tma.async.load {{.*}} multicast_mask = %c3_i16
// CHECK: arith.cmpi eq, %[[RANK]], %c0
// CHECK: nvgpu.tma.async.load {{.*}} multicast_mask = %c3_i16
// CHECK: arith.cmpi eq, %[[RANK]], %c1
// CHECK: nvgpu.tma.async.load {{.*}} multicast_mask = %c3_i16
// CHECK: arith.cmpi eq, %[[RANK]], %c1
// CHECK: nvgpu.tma.async.load {{.*}} multicast_mask = %c3_i16
// CHECK: nvvm.cluster.arrive {aligned}
// CHECK-NEXT: nvvm.cluster.wait {aligned}
// The dense store iterator stages the block's values in the freed stages
// (rows of 256 + 8 floats, column pairs) and stores rows in 16-byte vectors,
// element by element at the edges and for rows of other lengths.
// CHECK: gpu.barrier
// CHECK: vector.store %{{.*}} : memref<128x264xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<128x264xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.store %{{.*}} : memref<?x?xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: memref.store %{{.*}} : memref<?x?xf32>
// Without clusters: the plain grid, one block's barriers and releases.
// NOCLUSTER-LABEL: gpu.module @gemm_f16_kernels
// NOCLUSTER-SAME: function = "gemm_f16_wgmma", grid = ["ceildiv(N, 256)", "ceildiv(M, 128)", "1"]
// NOCLUSTER: gpu.func @gemm_f16_wgmma({{.*}}) kernel attributes {kge.grid_constants = 2 : i32, known_block_size = array<i32: 288, 1, 1>}
// NOCLUSTER-NOT: cluster
// NOCLUSTER: nvgpu.mbarrier.init %{{.*}}, %c2
// NOCLUSTER: gpu.barrier
// NOCLUSTER: nvgpu.mbarrier.arrive
// NOCLUSTER-NOT: multicast_mask
// NOCLUSTER: gpu.func @gemm_f16_mma(
// BADCLUSTER: invalid cluster-m 3 (expected 1, 2 or 4)
// The mma.sync kernel: ldmatrix (B is stored k-major: transposed), m16n8k16.
// CHECK: gpu.func @gemm_f16_mma_small
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<{{[0-9]+}}xf16, #gpu.address_space<workgroup>> -> vector<4x2xf16>
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
// CHECK: gpu.func @gemm_f16_small
// CHECK-NOT: nvgpu.
// CHECK: gpu.return
// SYNC-LABEL: gpu.module @gemm_f16_kernels
// SYNC-NOT: wgmma
// SYNC: function = "gemm_f16_mma", grid = ["ceildiv(N, 128)", "ceildiv(M, 128)", "1"]
// FMA-LABEL: gpu.module @gemm_f16_kernels
// FMA-NOT: nvgpu
// FMA: gpu.func @gemm_f16(
// FMA-NOT: nvgpu
// FMA: gpu.func @gemm_f16_small(
func.func @gemm_f16(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense inner {
  ^bb0(%a: f16, %b: f16):
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %p = arith.mulf %x, %y : f32
    tile.yield %p : f32
  }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#jk = affine_map<(i, j, k) -> (j, k)>

// BF16 with both operands k-contiguous: the NVVM op for bf16 (upstream's
// nvgpu lowering has none), wgmma without transposes.
// CHECK-LABEL: gpu.module @gemm_bf16_nt_kernels
// CHECK: nvvm.wgmma.mma_async {{.*}} A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: gpu.func @gemm_bf16_nt_mma_small
// CHECK-NOT: transpose = true
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
func.func @gemm_bf16_nt(%A: memref<?x?xbf16> {kge.param = "A"}, %B: memref<?x?xbf16> {kge.param = "B"},
                        %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xbf16>, memref<?x?xbf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense inner {
  ^bb0(%a: bf16, %b: bf16):
    %x = arith.extf %a : bf16 to f32
    %y = arith.extf %b : bf16 to f32
    %p = arith.mulf %y, %x : f32
    tile.yield %p : f32
  }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#jk = affine_map<(i, j, k) -> (j, k)>

// FP32 operands stay on CUDA cores unless matrix-math asks for tensor
// cores, then mma.sync m16n8k8 (3xTF32 - three products per step, split
// operands; plain TF32 one, operands rounded).
// CHECK-LABEL: gpu.module @gemm_f32_kernels
// CHECK-NOT: nvgpu
// CHECK: gpu.return
// X3-LABEL: gpu.module @gemm_f32_kernels
// X3-SAME: function = "gemm_f32_mma", grid = ["ceildiv(N, 128)", "ceildiv(M, 128)", "1"], kind = "kernel", module = "gemm_f32_kernels", shared_bytes = "65536", when = "(1 - min(1, K - K / 4 * 4)) * (1 - min(1, N - N / 4 * 4))
// X3: gpu.func @gemm_f32_mma(
// The split rounds each operand to TF32 (two integer operations) and keeps
// the rest (NaN for a NaN, whatever the rounding made of it).
// X3: %[[SUM:.*]] = arith.addi %{{.*}}, %{{.*}} : vector<4x1xi32>
// X3: %[[ROUNDED:.*]] = arith.andi %[[SUM]], %{{.*}} : vector<4x1xi32>
// X3: %[[BIG:.*]] = arith.bitcast %[[ROUNDED]] : vector<4x1xi32> to vector<4x1xf32>
// X3: arith.subf %{{.*}}, %[[BIG]] : vector<4x1xf32>
// Each step's three products chain from zero (small ones first) and are
// added to the running sum in FP32, not chained through it.
// X3: %[[S1:.*]] = nvgpu.mma.sync({{.*}}, %[[ZERO:cst[_0-9]*]]) {mmaShape = [16, 8, 8], tf32Enabled} : (vector<4x1xf32>, vector<2x1xf32>, vector<2x2xf32>) -> vector<2x2xf32>
// X3-NEXT: %[[S2:.*]] = nvgpu.mma.sync({{.*}}, %[[S1]]) {mmaShape = [16, 8, 8], tf32Enabled}
// X3-NEXT: %[[S3:.*]] = nvgpu.mma.sync({{.*}}, %[[S2]]) {mmaShape = [16, 8, 8], tf32Enabled}
// X3-NEXT: arith.addf %{{.*}}, %[[S3]] : vector<2x2xf32>
// TF32-LABEL: gpu.module @gemm_f32_kernels
// Plain TF32 with B stored n-contiguous: warpgroup MMA on a transposed copy
// of B (k innermost) that the device library writes first, where the
// warpgroup kernel runs; the kernel reads the copy (N x K) in B's place,
// its tensor map over the scratch buffer; the copy's rows need whole
// 16-byte chunks too (K % 4).
// TF32-SAME: kge.launch_plan = [{args = [{buffer = "param:B", kind = "pointer"}, {buffer = "scratch:transposed_B", kind = "pointer"}, {kind = "i64", value = "K"}, {kind = "i64", value = "N"}], block = ["256", "1", "1"], function = "kge_transpose_32", grid = ["ceildiv(N, 64)", "min(ceildiv(K, 64), 65535)", "1"], kind = "kernel", module = "library", shared_bytes = "0", when = "[[WHEN:\(1 - min\(1, K - K / 4 \* 4\)\) \* \(1 - min\(1, N - N / 4 \* 4\)\) \* min\(1, ceildiv\(N, 256\) \* ceildiv\(M, 128\) / 132\) \* min\(1, K / 1024\)]]"}
// TF32-SAME: {buffer = "scratch:transposed_B", kind = "memref", shape = ["N", "K"]}
// TF32-SAME: {box = [128, 32], buffer = "scratch:transposed_B", kind = "tensormap", shape = ["N", "K"]}], block = ["288", "1", "1"], function = "gemm_f32_wgmma", {{.*}} when = "[[WHEN]]"
// TF32-SAME: {buffer = "param:B", kind = "memref", shape = ["K", "N"]}
// TF32-SAME: function = "gemm_f32_mma"
// TF32-SAME: kge.scratch = [{count = "K * N", dtype = "f32", name = "transposed_B"}]
// TF32: gpu.func @gemm_f32_wgmma(
// TF32-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// Single TF32 on mma.sync reads the operands as stored (the tensor cores
// truncate).
// TF32: gpu.func @gemm_f32_mma(
// TF32-NOT: arith.addi %{{.*}} : vector<4x1xi32>
// TF32: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// TF32-NOT: arith.subf
// TF32: nvgpu.mma.sync({{.*}}) {mmaShape = [16, 8, 8], tf32Enabled}
// BAD: invalid matrix-math 'tf64' (expected fma, tf32 or tf32x3)
func.func @gemm_f32(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                    %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense inner {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    tile.yield %p : f32
  }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#jk = affine_map<(i, j, k) -> (j, k)>

// TF32 with both operands k-major (B[j, k]): warpgroup MMA too, f32 tiles of
// 128-byte rows (block-k 32, boxes of 32 floats), m64n256k8 products,
// reading the operands in place (no copy: @gemm_f32 above transposes B).
// TF32-LABEL: gpu.module @gemm_f32_nt_kernels
// TF32-SAME: {box = [128, 32], buffer = "param:A", kind = "tensormap"}, {box = [128, 32], buffer = "param:B", kind = "tensormap"}], block = ["288", "1", "1"], function = "gemm_f32_nt_wgmma"
// TF32: gpu.func @gemm_f32_nt_wgmma(
// TF32-COUNT-4: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 256, k = 8>, D[<f32>, <one>], A[<tf32>, <one>, <row>], B[<tf32>, <one>, <col>]
// TF32: nvgpu.mbarrier.arrive.expect_tx %{{.*}}, %c49152
// X3-LABEL: gpu.module @gemm_f32_nt_kernels
// X3-NOT: wgmma
// X3: gpu.func @gemm_f32_nt_mma(
func.func @gemm_f32_nt(%A: memref<?x?xf32> {kge.param = "A"}, %B: memref<?x?xf32> {kge.param = "B"},
                       %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>) outs(%C : memref<?x?xf32>)
      maps [#ik, #jk] accumulate add output dense inner {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    tile.yield %p : f32
  }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#jk = affine_map<(i, j, k) -> (j, k)>

// Not a product of the two operands (max, then square): CUDA cores at every
// precision.
// X3-LABEL: gpu.module @not_a_product_kernels
// X3-NOT: nvgpu
// X3: gpu.return
func.func @not_a_product(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                         %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B : memref<?x?xf16>, memref<?x?xf16>) outs(%C : memref<?x?xf32>)
      maps [#ik, #kj] accumulate add output dense inner {
  ^bb0(%a: f16, %b: f16):
    %x = arith.extf %a : f16 to f32
    %y = arith.extf %b : f16 to f32
    %m = arith.maximumf %x, %y : f32
    %p = arith.mulf %m, %m : f32
    tile.yield %p : f32
  }
  return
}

// -----

#ik = affine_map<(i, j, k) -> (i, k)>
#kj = affine_map<(i, j, k) -> (k, j)>
#i = affine_map<(i, j, k) -> (i)>
#j = affine_map<(i, j, k) -> (j)>

// A join may let one block skip its reduction: its warpgroup kernel runs
// without clusters (a block of a cluster would wait for its partner's
// multicasts forever), and its dense output keeps the fragments' stores
// (pairs the join rejects keep their previous contents).
// CHECK-LABEL: gpu.module @joined_f16_kernels
// CHECK-SAME: function = "joined_f16_wgmma", grid = ["ceildiv(N, 256)", "ceildiv(M, 128)", "1"]
// CHECK: gpu.func @joined_f16_wgmma({{.*}}) kernel attributes {kge.grid_constants = 2 : i32, known_block_size = array<i32: 288, 1, 1>}
// CHECK-NOT: multicast_mask
// CHECK-NOT: vector<4xf32>
// CHECK: gpu.func @joined_f16_mma(
func.func @joined_f16(%A: memref<?x?xf16> {kge.param = "A"}, %B: memref<?x?xf16> {kge.param = "B"},
                      %ka: memref<?xi32> {kge.param = "ka"}, %kb: memref<?xi32> {kge.param = "kb"},
                      %C: memref<?x?xf32> {kge.param = "C"}) {
  tile.task ins(%A, %B, %ka, %kb : memref<?x?xf16>, memref<?x?xf16>, memref<?xi32>, memref<?xi32>)
      outs(%C : memref<?x?xf32>)
      maps [#ik, #kj, #i, #j] accumulate add output dense
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
      }
  return
}

