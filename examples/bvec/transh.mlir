// TransH (Wang et al., 2014; cuKE Table II): translation on the hyperplane
// of the relation with normal Pv[r]:
//   d = Eemb[h] - Eemb[t]
//   score = || d + Remb[r] - (Pv[r] . d) * Pv[r] ||_2
bvec.func @transh(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %Pv: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %normal = bvec.gather_vec %Pv[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %along = bvec.vec_mul_vec %normal, %diff : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %projection = bvec.scal_mul_vec %along, %normal : !bvec.scalar<?xf32>, !bvec.vec<?x?xf32> -> !bvec.vec<?x?xf32>
  %translated = bvec.add %diff, %rel : !bvec.vec<?x?xf32>
  %onplane = bvec.sub %translated, %projection : !bvec.vec<?x?xf32>
  %score = bvec.norm %onplane, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
