// Two matrix products in one stage over different index arrays (their runs
// differ): the work-item table of the block is rebuilt between them.
bvec.func @two(%E: !bvec.table<?x64xf32>, %P: !bvec.table<?x64x64xf32>,
               %Q: !bvec.table<?x64x32xf32>, %h: !bvec.indices<?xi32>,
               %r: !bvec.indices<?xi32>, %t: !bvec.indices<?xi32>)
    -> (a: !bvec.scalar<?xf32>, c: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x64xf32>
  %p = bvec.gather_mat %P[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x64x64xf32>
  %q = bvec.gather_mat %Q[%t] : !bvec.table<?x64x32xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x64x32xf32>
  %y = bvec.vec_mul_mat %x, %p : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %z = bvec.vec_mul_mat %x, %q : !bvec.vec<?x64xf32>, !bvec.mat<?x64x32xf32> -> !bvec.vec<?x32xf32>
  %a = bvec.norm %y, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %c = bvec.norm %z, p = 2 : !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  bvec.return %a, %c : !bvec.scalar<?xf32>, !bvec.scalar<?xf32>
}
