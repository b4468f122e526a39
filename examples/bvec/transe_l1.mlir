// TransE with the 1-norm (Bordes et al., 2013; cuKE Table II):
//   score = || Eemb[h] - Eemb[t] + Remb[r] ||_1
bvec.func @transe_l1(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %translated = bvec.add %diff, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %translated, p = 1 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
