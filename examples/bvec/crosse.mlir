// CrossE (Zhang et al., 2019): an interaction vector Cemb[r] crosses the
// head with the relation; tanh and sigmoid gate the result:
//   c = Cemb[r] * Eemb[h]
//   score = sigmoid( tanh(c + c * Remb[r] + Bias[r]) . Eemb[t] )
// (CrossE's bias is one global vector: every row of Bias equal.)
bvec.func @crosse(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %Cemb: !bvec.table<?x?xf32>, %Bias: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %interaction = bvec.gather_vec %Cemb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %crossed = bvec.mul %interaction, %head : !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %both = bvec.mul %crossed, %rel : !bvec.vec<?x?xf32>
  %sum = bvec.add %crossed, %both : !bvec.vec<?x?xf32>
  %bias = bvec.gather_vec %Bias[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %biased = bvec.add %sum, %bias : !bvec.vec<?x?xf32>
  %hidden = bvec.tanh %biased : !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %logit = bvec.vec_mul_vec %hidden, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %score = bvec.sigmoid %logit : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
