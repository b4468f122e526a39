// Slices of gathered rows (gathers of column ranges, read from the table at
// the slice's offset): aligned and unaligned offsets, odd lengths, a row read
// whole and sliced, slices returned, materialized for an outer product,
// carried into a later stage, and next to a slice of a computed vector
// (read from shared memory). One function per `// -----` piece: the CPU
// path is checked against NumPy (test/python/test_cpu_ops.py) and the GPU
// kernels against the CPU path, with rows staged and not
// (test/gpu/build_compositions.py).

// ComplEx as PyTorch users write it: one table of twice the rank, chunked.
bvec.func @complex_chunked(%E: !bvec.table<?x64xf32>, %R: !bvec.table<?x64xf32>,
                           %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                           %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %hv = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rv = bvec.gather_vec %R[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tv = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %hr = bvec.slice %hv[0] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %hi = bvec.slice %hv[32] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %rr = bvec.slice %rv[0] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %ri = bvec.slice %rv[32] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %tr = bvec.slice %tv[0] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %ti = bvec.slice %tv[32] : !bvec.vec<?x64xf32> -> !bvec.vec<?x32xf32>
  %a = bvec.mul %hr, %rr : !bvec.vec<?x32xf32>
  %b = bvec.mul %hi, %ri : !bvec.vec<?x32xf32>
  %re = bvec.sub %a, %b : !bvec.vec<?x32xf32>
  %c = bvec.mul %hr, %ri : !bvec.vec<?x32xf32>
  %d = bvec.mul %hi, %rr : !bvec.vec<?x32xf32>
  %im = bvec.add %c, %d : !bvec.vec<?x32xf32>
  %sre = bvec.vec_mul_vec %re, %tr : !bvec.vec<?x32xf32>, !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  %sim = bvec.vec_mul_vec %im, %ti : !bvec.vec<?x32xf32>, !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  %score = bvec.add %sre, %sim : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// A row read whole (its norm) and through a slice at an offset that is not
// a multiple of the vector width (returned, and reduced).
bvec.func @unaligned(%E: !bvec.table<?x12xf32>, %h: !bvec.indices<?xi64>)
    -> (n: !bvec.scalar<?xf32>, s: !bvec.vec<?x8xf32>, m: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x12xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x12xf32>
  %s = bvec.slice %v[2] : !bvec.vec<?x12xf32> -> !bvec.vec<?x8xf32>
  %n = bvec.norm %v, p = 2 : !bvec.vec<?x12xf32> -> !bvec.scalar<?xf32>
  %m = bvec.reduce max %s : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %n, %s, %m : !bvec.scalar<?xf32>, !bvec.vec<?x8xf32>, !bvec.scalar<?xf32>
}

// -----

// An odd length at an odd offset (vector width 1), two slices of one row.
bvec.func @odd(%E: !bvec.table<?x9xf32>, %h: !bvec.indices<?xi32>, %t: !bvec.indices<?xi32>)
    -> (d: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x9xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x9xf32>
  %w = bvec.gather_vec %E[%t] : !bvec.table<?x9xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x9xf32>
  %a = bvec.slice %v[1] : !bvec.vec<?x9xf32> -> !bvec.vec<?x3xf32>
  %b = bvec.slice %v[5] : !bvec.vec<?x9xf32> -> !bvec.vec<?x3xf32>
  %c = bvec.slice %w[6] : !bvec.vec<?x9xf32> -> !bvec.vec<?x3xf32>
  %x = bvec.sub %a, %b : !bvec.vec<?x3xf32>
  %y = bvec.add %x, %c : !bvec.vec<?x3xf32>
  %d = bvec.norm %y, p = 1 : !bvec.vec<?x3xf32> -> !bvec.scalar<?xf32>
  bvec.return %d : !bvec.scalar<?xf32>
}

// -----

// A gathered slice materialized for an outer product, with a slice of a
// computed vector (shared memory, a later stage).
bvec.func @outer(%E: !bvec.table<?x8xf32>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (o: !bvec.mat<?x4x4xf32>, q: !bvec.vec<?x4xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %w = bvec.gather_vec %E[%t] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.slice %v[4] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %x = bvec.add %v, %w : !bvec.vec<?x8xf32>
  %q = bvec.slice %x[2] : !bvec.vec<?x8xf32> -> !bvec.vec<?x4xf32>
  %o = bvec.vec_outer_vec %s, %q : !bvec.vec<?x4xf32>, !bvec.vec<?x4xf32> -> !bvec.mat<?x4x4xf32>
  bvec.return %o, %q : !bvec.mat<?x4x4xf32>, !bvec.vec<?x4xf32>
}

// -----

// TransH on the second half of each row: the projection's dot product ends
// stage 0 and the slices are read again (or carried) in stage 1.
bvec.func @transh_half(%E: !bvec.table<?x128xf32>, %P: !bvec.table<?x64xf32>,
                       %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                       %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %hv = bvec.gather_vec %E[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %tv = bvec.gather_vec %E[%t] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %w = bvec.gather_vec %P[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %hs = bvec.slice %hv[64] : !bvec.vec<?x128xf32> -> !bvec.vec<?x64xf32>
  %ts = bvec.slice %tv[64] : !bvec.vec<?x128xf32> -> !bvec.vec<?x64xf32>
  %d = bvec.sub %hs, %ts : !bvec.vec<?x64xf32>
  %p = bvec.vec_mul_vec %w, %d : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %pw = bvec.scal_mul_vec %p, %w : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %e = bvec.sub %d, %pw : !bvec.vec<?x64xf32>
  %score = bvec.norm %e, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
