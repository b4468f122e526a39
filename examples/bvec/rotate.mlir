// RotatE (Sun et al., 2019): complex embeddings with real parts in Ere and
// imaginary parts in Eim; each relation rotates the head by its phases Rph:
//   rotated = e_h * (cos Rph[r] + i sin Rph[r])
//   score = sum_k |rotated_k - e_t,k|        (the L1 norm of moduli)
// The sine and the cosine of a phase share one argument reduction on the GPU.
bvec.func @rotate(%Ere: !bvec.table<?x?xf32>, %Eim: !bvec.table<?x?xf32>, %Rph: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %hre = bvec.gather_vec %Ere[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %him = bvec.gather_vec %Eim[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tre = bvec.gather_vec %Ere[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tim = bvec.gather_vec %Eim[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %phase = bvec.gather_vec %Rph[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rre = bvec.cos %phase : !bvec.vec<?x?xf32>
  %rim = bvec.sin %phase : !bvec.vec<?x?xf32>
  %a = bvec.mul %hre, %rre : !bvec.vec<?x?xf32>
  %b = bvec.mul %him, %rim : !bvec.vec<?x?xf32>
  %c = bvec.sub %a, %b : !bvec.vec<?x?xf32>
  %real = bvec.sub %c, %tre : !bvec.vec<?x?xf32>
  %d = bvec.mul %hre, %rim : !bvec.vec<?x?xf32>
  %e = bvec.mul %him, %rre : !bvec.vec<?x?xf32>
  %f = bvec.add %d, %e : !bvec.vec<?x?xf32>
  %imag = bvec.sub %f, %tim : !bvec.vec<?x?xf32>
  %real2 = bvec.mul %real, %real : !bvec.vec<?x?xf32>
  %imag2 = bvec.mul %imag, %imag : !bvec.vec<?x?xf32>
  %squared = bvec.add %real2, %imag2 : !bvec.vec<?x?xf32>
  %modulus = bvec.sqrt %squared : !bvec.vec<?x?xf32>
  %score = bvec.reduce sum %modulus : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
