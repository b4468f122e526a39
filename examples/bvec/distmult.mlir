// DistMult (Yang et al., 2015): a bilinear form with a diagonal matrix:
//   score = sum_k Eemb[h]_k * Remb[r]_k * Eemb[t]_k
bvec.func @distmult(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %hr = bvec.mul %head, %rel : !bvec.vec<?x?xf32>
  %score = bvec.vec_mul_vec %hr, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
