// TransD (Ji et al., 2015): every entity and relation has a second,
// projection vector (Ep, Rp); entities are projected before the translation:
//   h' = Eemb[h] + (Ep[h] . Eemb[h]) * Rp[r]
//   t' = Eemb[t] + (Ep[t] . Eemb[t]) * Rp[r]
//   score = || h' + Remb[r] - t' ||_2
bvec.func @transd(%Eemb: !bvec.table<?x?xf32>, %Ep: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %Rp: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %hp = bvec.gather_vec %Ep[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tp = bvec.gather_vec %Ep[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rp = bvec.gather_vec %Rp[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %hdot = bvec.vec_mul_vec %hp, %head : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %hshift = bvec.scal_mul_vec %hdot, %rp : !bvec.scalar<?xf32>, !bvec.vec<?x?xf32> -> !bvec.vec<?x?xf32>
  %hproj = bvec.add %head, %hshift : !bvec.vec<?x?xf32>
  %tdot = bvec.vec_mul_vec %tp, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %tshift = bvec.scal_mul_vec %tdot, %rp : !bvec.scalar<?xf32>, !bvec.vec<?x?xf32> -> !bvec.vec<?x?xf32>
  %tproj = bvec.add %tail, %tshift : !bvec.vec<?x?xf32>
  %translated = bvec.add %hproj, %rel : !bvec.vec<?x?xf32>
  %d = bvec.sub %translated, %tproj : !bvec.vec<?x?xf32>
  %score = bvec.norm %d, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
