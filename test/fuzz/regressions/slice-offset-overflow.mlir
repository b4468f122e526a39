// kge-fuzz (UBSan): the slice verifier computed offset + length in int64
// and overflowed for offsets near INT64_MAX.
bvec.func @misc(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (o: !bvec.vec<?x2xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %s = bvec.slice %v[9223372036854775807] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  bvec.return %s : !bvec.vec<?x2xf32>
}
