// SimplE (Kazemi & Poole, 2018): each entity has a head-role embedding (EH)
// and a tail-role embedding (ET); each relation a forward (R) and an inverse
// (Rinv) one. The score averages the two CP terms:
//   score = (<EH[h], R[r], ET[t]> + <EH[t], Rinv[r], ET[h]>) / 2
bvec.func @simple(%EH: !bvec.table<?x?xf32>, %ET: !bvec.table<?x?xf32>, %R: !bvec.table<?x?xf32>, %Rinv: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %hh = bvec.gather_vec %EH[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %hr = bvec.mul %hh, %rel : !bvec.vec<?x?xf32>
  %tt = bvec.gather_vec %ET[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %forward = bvec.vec_mul_vec %hr, %tt : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %th = bvec.gather_vec %EH[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %inv = bvec.gather_vec %Rinv[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tr = bvec.mul %th, %inv : !bvec.vec<?x?xf32>
  %ht = bvec.gather_vec %ET[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %backward = bvec.vec_mul_vec %tr, %ht : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %both = bvec.add %forward, %backward : !bvec.scalar<?xf32>
  %half = bvec.constant 5.000000e-01 : !bvec.scalar<?xf32>
  %score = bvec.mul %half, %both : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
