// TransF (Feng et al., 2016) as written in cuKE's Table II:
//   score = 2 * Eemb[h] . Eemb[t] + (Eemb[t] - Eemb[h]) . Remb[r]
bvec.func @transf(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %ht = bvec.vec_mul_vec %head, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %two = bvec.constant 2.0 : !bvec.scalar<?xf32>
  %twice = bvec.mul %two, %ht : !bvec.scalar<?xf32>
  %diff = bvec.sub %tail, %head : !bvec.vec<?x?xf32>
  %dr = bvec.vec_mul_vec %diff, %rel : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %score = bvec.add %twice, %dr : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
