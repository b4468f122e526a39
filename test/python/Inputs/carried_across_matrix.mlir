// Three stages with a matrix product in the last: the GPU kernel carries
// `d` and `rel` in registers from stage 0 into stage 1 (which materializes
// `y`), and stage 2, after the product, loads the rows of `d` again
// (test/Conversion/BatchedVectorToGPU/carry.mlir).
bvec.func @across(%E: !bvec.table<?x64xf32>, %R: !bvec.table<?x64xf32>,
                  %M: !bvec.table<?x64x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.gather_mat %M[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %d = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %n = bvec.norm %d, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %nr = bvec.scal_mul_vec %n, %rel : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %y = bvec.add %nr, %d : !bvec.vec<?x64xf32>
  %p = bvec.vec_mul_mat %y, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %z = bvec.add %p, %d : !bvec.vec<?x64xf32>
  %score = bvec.norm %z, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
