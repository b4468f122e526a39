// Static lengths that no GPU could hold: the GPU lowering refuses them
// instead of computing shared-memory sizes that overflow.
bvec.func @huge(%E: !bvec.table<?x4611686018427387904xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4611686018427387904xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4611686018427387904xf32>
  %s = bvec.norm %v, p = 2 : !bvec.vec<?x4611686018427387904xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
