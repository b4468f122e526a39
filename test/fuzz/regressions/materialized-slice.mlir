// kge-fuzz: convert-bvec-to-gpu crashed storing a materialized slice (the
// input of vec_outer_vec), which the chunk loop reads instead of computing.
// Constants take the batch size from the first output; slices offset the
// load; outer products write a matrix per edge; sigmoid is 1 / (1 + e^-x).
bvec.func @misc(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (o: !bvec.mat<?x2x4xf32>) {
  %c = bvec.constant 0.5 : !bvec.vec<?x4xf32>
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %s = bvec.slice %v[2] : !bvec.vec<?x4xf32> -> !bvec.vec<?x2xf32>
  %sig = bvec.sigmoid %c : !bvec.vec<?x4xf32>
  %o = bvec.vec_outer_vec %s, %sig : !bvec.vec<?x2xf32>, !bvec.vec<?x4xf32> -> !bvec.mat<?x2x4xf32>
  bvec.return %o : !bvec.mat<?x2x4xf32>
}
