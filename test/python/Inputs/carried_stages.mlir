// Three stages whose later loops read vectors of earlier ones again, in two
// length classes: with static lengths the GPU kernel keeps them in
// registers (layout carry_floats) instead of loading the rows again.
//   stage 0: d = h - t, n = ||d||
//   stage 1: m = n * rel + d, k = m . rel, small = mean(n * s)
//   stage 2: w = k * m - h, score = ||w||_1, w returned
bvec.func @carried(%E: !bvec.table<?x128xf32>, %R: !bvec.table<?x128xf32>,
                   %S: !bvec.table<?x64xf32>, %h: !bvec.indices<?xi32>,
                   %r: !bvec.indices<?xi32>, %t: !bvec.indices<?xi32>)
    -> (score: !bvec.scalar<?xf32>, w: !bvec.vec<?x128xf32>,
        small: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x128xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x128xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x128xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x128xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x128xf32>
  %s = bvec.gather_vec %S[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x64xf32>
  %d = bvec.sub %head, %tail : !bvec.vec<?x128xf32>
  %n = bvec.norm %d, p = 2 : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  %nr = bvec.scal_mul_vec %n, %rel : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32> -> !bvec.vec<?x128xf32>
  %m = bvec.add %nr, %d : !bvec.vec<?x128xf32>
  %k = bvec.vec_mul_vec %m, %rel : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  %ns = bvec.scal_mul_vec %n, %s : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %small = bvec.reduce mean %ns : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %km = bvec.scal_mul_vec %k, %m : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32> -> !bvec.vec<?x128xf32>
  %w = bvec.sub %km, %head : !bvec.vec<?x128xf32>
  %score = bvec.norm %w, p = 1 : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  bvec.return %score, %w, %small : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32>, !bvec.scalar<?xf32>
}
