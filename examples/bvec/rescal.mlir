// RESCAL (Nickel et al., 2011; cuKE Table II): a bilinear form with one
// full matrix per relation:
//   score = Eemb[h] . Pm[r] . Eemb[t]
bvec.func @rescal(%Eemb: !bvec.table<?x?xf32>, %Pm: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %hm = bvec.vec_mul_mat %head, %rel : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %score = bvec.vec_mul_vec %hm, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
