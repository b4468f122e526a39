// Elementwise functions of gathered rows, each a result (GPU: sines and
// cosines expanded in arith operations, the others from libdevice). Static
// length: 16-byte chunks.
bvec.func @elementary(%X: !bvec.table<?x128xf32>, %h: !bvec.indices<?xi64>)
    -> (sin: !bvec.vec<?x128xf32>, cos: !bvec.vec<?x128xf32>, exp: !bvec.vec<?x128xf32>,
        log: !bvec.vec<?x128xf32>, tanh: !bvec.vec<?x128xf32>, sigmoid: !bvec.vec<?x128xf32>,
        sqrt: !bvec.vec<?x128xf32>) {
  %x = bvec.gather_vec %X[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %s = bvec.sin %x : !bvec.vec<?x128xf32>
  %c = bvec.cos %x : !bvec.vec<?x128xf32>
  %e = bvec.exp %x : !bvec.vec<?x128xf32>
  %a = bvec.abs %x : !bvec.vec<?x128xf32>
  %l = bvec.log %a : !bvec.vec<?x128xf32>
  %t = bvec.tanh %x : !bvec.vec<?x128xf32>
  %g = bvec.sigmoid %x : !bvec.vec<?x128xf32>
  %q = bvec.sqrt %a : !bvec.vec<?x128xf32>
  bvec.return %s, %c, %e, %l, %t, %g, %q : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>
}
