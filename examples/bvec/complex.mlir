// ComplEx (Trouillon et al., 2016): complex embeddings with real parts in
// Ere/Rre and imaginary parts in Eim/Rim:
//   score = Re(<e_h, w_r, conj(e_t)>)
//         = <Re(e_h w_r), Re(e_t)> + <Im(e_h w_r), Im(e_t)>
// with Re(e_h w_r) = hre*rre - him*rim and Im(e_h w_r) = hre*rim + him*rre.
bvec.func @complex(%Ere: !bvec.table<?x?xf32>, %Eim: !bvec.table<?x?xf32>, %Rre: !bvec.table<?x?xf32>, %Rim: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                   %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %hre = bvec.gather_vec %Ere[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %him = bvec.gather_vec %Eim[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tre = bvec.gather_vec %Ere[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tim = bvec.gather_vec %Eim[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rre = bvec.gather_vec %Rre[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rim = bvec.gather_vec %Rim[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %a = bvec.mul %hre, %rre : !bvec.vec<?x?xf32>
  %b = bvec.mul %him, %rim : !bvec.vec<?x?xf32>
  %real = bvec.sub %a, %b : !bvec.vec<?x?xf32>
  %c = bvec.mul %hre, %rim : !bvec.vec<?x?xf32>
  %d = bvec.mul %him, %rre : !bvec.vec<?x?xf32>
  %imag = bvec.add %c, %d : !bvec.vec<?x?xf32>
  %sre = bvec.vec_mul_vec %real, %tre : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %sim = bvec.vec_mul_vec %imag, %tim : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %score = bvec.add %sre, %sim : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
