// Matrix products over runs of a shared key on the GPU's tensor cores:
// static lengths that are multiples of 4 (16-byte layouts), a composite
// matrix of two gathered tables and a constant, a 20-row input (a masked
// last step of 8 rows) and 12 output columns (part of a 32-column item).
bvec.func @matrix_runs(%E: !bvec.table<?x20xf32>, %P: !bvec.table<?x20x12xf32>,
                       %Q: !bvec.table<?x20x12xf32>, %h: !bvec.indices<?xi32>,
                       %r: !bvec.indices<?xi32>) -> (y: !bvec.vec<?x12xf32>, s: !bvec.scalar<?xf32>) {
  %x = bvec.gather_vec %E[%h] : !bvec.table<?x20xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x20xf32>
  %p = bvec.gather_mat %P[%r] : !bvec.table<?x20x12xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x20x12xf32>
  %q = bvec.gather_mat %Q[%r] : !bvec.table<?x20x12xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x20x12xf32>
  %half = bvec.constant 0.5 : !bvec.mat<?x20x12xf32>
  %pq = bvec.mul %p, %q : !bvec.mat<?x20x12xf32>
  %m = bvec.add %pq, %half : !bvec.mat<?x20x12xf32>
  %y = bvec.vec_mul_mat %x, %m : !bvec.vec<?x20xf32>, !bvec.mat<?x20x12xf32> -> !bvec.vec<?x12xf32>
  %s = bvec.norm %y, p = 2 : !bvec.vec<?x12xf32> -> !bvec.scalar<?xf32>
  bvec.return %y, %s : !bvec.vec<?x12xf32>, !bvec.scalar<?xf32>
}
