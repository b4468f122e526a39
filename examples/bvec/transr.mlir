// TransR (Lin et al., 2015; cuKE Table II): entities are projected into the
// relation space by the relation's matrix Pm[r] (entity length x relation
// length):
//   score = || (Eemb[h] - Eemb[t]) . Pm[r] + Remb[r] ||_2
bvec.func @transr(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %Pm: !bvec.table<?x?x?xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %proj = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %projected = bvec.vec_mul_mat %diff, %proj : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %translated = bvec.add %projected, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %translated, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
