// RUN: kge-opt %s -verify-diagnostics -convert-bvec-to-gpu

// convert-bvec-to-gpu implements the layout bvec-fuse chose; without one it
// says so instead of guessing.

// expected-error@+1 {{'bvec.func' op has no 'bvec.kernel' layout; run bvec-fuse first}}
bvec.func @unfused(%E: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %s = bvec.norm %a, p = 1 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}
