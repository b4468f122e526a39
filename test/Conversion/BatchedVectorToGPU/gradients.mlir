// RUN: kge-opt %s -bvec-differentiate -bvec-fuse -convert-bvec-to-gpu | FileCheck %s

// The gradient function of TransR lowers to one kernel: the seed read at
// each edge's row before the first stage, the transposed product (one warp
// reduction per matrix row into the shared output vector) and the per-edge
// matrix gradient written as a matrix result.

// CHECK-LABEL: gpu.func @transr_grad
// The per-edge seed, loaded once per edge of the warp.
// CHECK: memref.load %arg6[
// CHECK: scf.for
// The transposed product's warp reduction.
// CHECK: gpu.shuffle  xor
// CHECK: gpu.return
bvec.func @transr(%Eemb: !bvec.table<?x32xf32>, %Remb: !bvec.table<?x16xf32>,
                  %Pm: !bvec.table<?x32x16xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x32xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x32xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x32xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x32xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x16xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x16xf32>
  %proj = bvec.gather_mat %Pm[%r] : !bvec.table<?x32x16xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x32x16xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x32xf32>
  %projected = bvec.vec_mul_mat %diff, %proj : !bvec.vec<?x32xf32>, !bvec.mat<?x32x16xf32> -> !bvec.vec<?x16xf32>
  %translated = bvec.add %projected, %rel : !bvec.vec<?x16xf32>
  %score = bvec.norm %translated, p = 2 : !bvec.vec<?x16xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
