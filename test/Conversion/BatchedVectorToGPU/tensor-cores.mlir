// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=matrix-math=fma -convert-bvec-to-gpu | FileCheck %s --check-prefix=FMA
// RUN: kge-opt %s -split-input-file -bvec-fuse="matrix-math=fma tile=32" -convert-bvec-to-gpu | FileCheck %s --check-prefix=FMA
// RUN: kge-opt %s -split-input-file -bvec-fuse=tile=32 -convert-bvec-to-gpu | FileCheck %s --check-prefix=TILE32
// RUN: kge-opt %s -split-input-file -bvec-fuse=deterministic=0 -convert-bvec-to-gpu | FileCheck %s --check-prefix=ANYORDER

// Matrix products over runs of a shared matrix (the tile's edges grouped by
// relation) run on tensor cores when the layout has 16-byte loads: a run of
// more than 2 edges is split into items of (up to a whole tile of) its edges
// x 32 output columns, each step of 8 matrix rows multiplied by
// mma.sync.m16n8k8 on TF32 operands, every FP32 operand split into a
// rounded TF32 part and the rest ((bits + 0x1000) & 0xFFFFE000, three
// products). Runs of 1 or 2 edges take FMA items of 4 edges x 128 columns.
// Rows of the materialized vectors are 68 floats apart instead of 64 (4
// mod 32), so that the inputs of 8 edges read by one mma lie in different
// banks.

// The batch is sorted by relation, the edges of one relation in the order
// of the sort's atomics. Deterministic products (the default): a run that
// continues into the tile before or after (its key is the key of the scored
// edge before the tile's first or after its last, read through the
// permutation) takes tensor cores whatever its size in this tile, so that
// the order never decides an edge's arithmetic.

// Without the guarantee, runs of at most 2 edges in the tile take FMAs.
// ANYORDER-LABEL: gpu.func @transr
// ANYORDER: %[[TC:.*]] = arith.cmpi ugt, %{{.*}}, %c2{{.*}} : index
// ANYORDER-NEXT: arith.constant 4 : index
// ANYORDER: arith.select %[[TC]], %c16{{.*}}, %c4{{.*}} : index

// CHECK-LABEL: gpu.module @transr_kernels
// CHECK-SAME: shared_bytes = "864 + 64*68 + 64*68"
// CHECK: gpu.func @transr
// CHECK: %[[PERM_BEFORE:.*]] = memref.load %arg7[%{{.*}}] : memref<?xi32>
// CHECK: %[[BEFORE:.*]] = arith.select %{{.*}}, %{{.*}}, %c-1_i32 : i32
// CHECK: %[[PERM_AFTER:.*]] = memref.load %arg7[%{{.*}}] : memref<?xi32>
// CHECK: %[[AFTER:.*]] = arith.select %{{.*}}, %{{.*}}, %c-1_i32{{.*}} : i32
// Items per run: 16 edges x 32 columns on tensor cores, 4 x 128 with FMAs.
// CHECK: %[[LONG:.*]] = arith.cmpi ugt, %{{.*}}, %c2{{.*}} : index
// CHECK-DAG: %[[IS_AFTER:.*]] = arith.cmpi eq, %{{.*}}, %[[AFTER]] : i32
// CHECK-DAG: %[[IS_BEFORE:.*]] = arith.cmpi eq, %{{.*}}, %[[BEFORE]] : i32
// CHECK: %[[SPLIT:.*]] = arith.ori %[[IS_BEFORE]], %[[IS_AFTER]] : i1
// CHECK: %[[TC:.*]] = arith.ori %[[LONG]], %[[SPLIT]] : i1
// CHECK: arith.select %[[TC]], %c16{{.*}}, %c4{{.*}} : index
// CHECK: arith.select %[[TC]], %c32{{.*}}, %c128{{.*}} : index
// CHECK: gpu.barrier
// The item loop: one block of 8 edges when at most 8 remain, else 2.
// CHECK: scf.if %[[ITEMTC:.*]] {
// CHECK: arith.cmpi ule, %{{.*}}, %c8{{.*}} : index
// CHECK: scf.if
// CHECK-DAG: arith.constant dense<4096> : vector<4xi32>
// CHECK-DAG: arith.constant dense<-8192> : vector<4xi32>
// CHECK: arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: vector.from_elements
// CHECK: } else {
// CHECK: nvvm.mma.sync
// CHECK: } else {
// CHECK-NOT: nvvm.mma.sync
// CHECK: vector.fma
// CHECK: gpu.return

// FMA-NOT: nvvm.mma.sync
// FMA: vector.fma
// FMA-NOT: nvvm.mma.sync

// Tiles of 32 edges: items of up to 32 edges (4 blocks of 8).
// TILE32: arith.select %{{.*}}, %c32{{.*}}, %c4{{.*}} : index
// TILE32: nvvm.mma.sync

bvec.func @transr(%Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>,
                  %Pm: !bvec.table<?x64x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.gather_mat %Pm[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %projected = bvec.vec_mul_mat %diff, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %sum = bvec.add %projected, %rel : !bvec.vec<?x64xf32>
  %score = bvec.norm %sum, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Input lengths that are not a multiple of 8 (here 100 = 12 * 8 + 4) end
// with a masked step: rows past the length are zero in both operands.
// Output columns past 100 are computed from clamped addresses and not
// stored. 100 floats are already 4 (mod 32): rows stay 100 apart.

// CHECK-LABEL: gpu.module @rescal_kernels
// CHECK-SAME: shared_bytes = "864 + 64*100 + 64*100"
// CHECK: gpu.func @rescal
// CHECK: nvvm.mma.sync
// CHECK: arith.cmpi ult, %{{.*}}, %c100{{.*}} : index
// CHECK: nvvm.mma.sync
// CHECK: gpu.return
bvec.func @rescal(%Eemb: !bvec.table<?x100xf32>, %Pm: !bvec.table<?x100x100xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x100xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x100xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x100xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x100xf32>
  %m = bvec.gather_mat %Pm[%r] : !bvec.table<?x100x100xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x100x100xf32>
  %projected = bvec.vec_mul_mat %head, %m : !bvec.vec<?x100xf32>, !bvec.mat<?x100x100xf32> -> !bvec.vec<?x100xf32>
  %score = bvec.vec_mul_vec %projected, %tail : !bvec.vec<?x100xf32>, !bvec.vec<?x100xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Matrices of each edge's own (an outer product) have no runs to share:
// FMAs, whatever the layout asks.

// CHECK-LABEL: gpu.module @outer_kernels
// CHECK-NOT: nvvm.mma.sync
// CHECK: vector.fma
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.return
bvec.func @outer(%Eemb: !bvec.table<?x64xf32>, %h: !bvec.indices<?xi64>,
                 %t: !bvec.indices<?xi64>) -> (out: !bvec.vec<?x64xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.vec_outer_vec %head, %tail : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.mat<?x64x64xf32>
  %out = bvec.vec_mul_mat %head, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  bvec.return %out : !bvec.vec<?x64xf32>
}

// -----

// Two products in one stage share the block's work-item table: the second
// rewrites it only after a barrier (every warp done with the first's items).

// CHECK-LABEL: gpu.func @two
// CHECK: memref.store %c0_i32, %{{.*}}[%c0{{.*}}] : memref<17xi32, #gpu.address_space<workgroup>>
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: memref.store %c0_i32, %{{.*}}[%c0{{.*}}] : memref<17xi32, #gpu.address_space<workgroup>>
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: gpu.return
bvec.func @two(%E: !bvec.table<?x64xf32>, %P: !bvec.table<?x64x64xf32>,
               %Q: !bvec.table<?x64x32xf32>, %h: !bvec.indices<?xi64>,
               %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (a: !bvec.scalar<?xf32>, c: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %p = bvec.gather_mat %P[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %q = bvec.gather_mat %Q[%t] : !bvec.table<?x64x32xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x32xf32>
  %y = bvec.vec_mul_mat %x, %p : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %z = bvec.vec_mul_mat %x, %q : !bvec.vec<?x64xf32>, !bvec.mat<?x64x32xf32> -> !bvec.vec<?x32xf32>
  %a = bvec.norm %y, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %c = bvec.norm %z, p = 2 : !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  bvec.return %a, %c : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}
