// Every bvec operation in one function, checked against NumPy by
// test_cpu_ops.py. Lengths are static so that slices and constants apply.
bvec.func @all_ops(%E: !bvec.table<?x6xf64>, %P: !bvec.table<?x6x4xf64>,
                   %h: !bvec.indices<?xi32>, %t: !bvec.indices<?xi32>)
    -> (unary: !bvec.vec<?x6xf64>, binary: !bvec.vec<?x6xf64>,
        reductions: !bvec.scalar<?xf64>, products: !bvec.vec<?x4xf64>,
        outer: !bvec.mat<?x3x4xf64>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x6xf64>, !bvec.indices<?xi32> -> !bvec.vec<?x6xf64>
  %b = bvec.gather_vec %E[%t] : !bvec.table<?x6xf64>, !bvec.indices<?xi32> -> !bvec.vec<?x6xf64>
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x6x4xf64>, !bvec.indices<?xi32> -> !bvec.mat<?x6x4xf64>
  // unary = sigmoid(tanh(a)) + cos(sin(b)) + sqrt(|a|) + log(exp(b) + 1) - (-a)
  %u0 = bvec.tanh %a : !bvec.vec<?x6xf64>
  %u1 = bvec.sigmoid %u0 : !bvec.vec<?x6xf64>
  %u2 = bvec.sin %b : !bvec.vec<?x6xf64>
  %u3 = bvec.cos %u2 : !bvec.vec<?x6xf64>
  %u4 = bvec.abs %a : !bvec.vec<?x6xf64>
  %u5 = bvec.sqrt %u4 : !bvec.vec<?x6xf64>
  %u6 = bvec.exp %b : !bvec.vec<?x6xf64>
  %one = bvec.constant 1.0 : !bvec.vec<?x6xf64>
  %u7 = bvec.add %u6, %one : !bvec.vec<?x6xf64>
  %u8 = bvec.log %u7 : !bvec.vec<?x6xf64>
  %u9 = bvec.neg %a : !bvec.vec<?x6xf64>
  %s0 = bvec.add %u1, %u3 : !bvec.vec<?x6xf64>
  %s1 = bvec.add %s0, %u5 : !bvec.vec<?x6xf64>
  %s2 = bvec.add %s1, %u8 : !bvec.vec<?x6xf64>
  %unary = bvec.sub %s2, %u9 : !bvec.vec<?x6xf64>
  // binary = max(a, b) * min(a, b) / (a * a + 2)
  %mx = bvec.max %a, %b : !bvec.vec<?x6xf64>
  %mn = bvec.min %a, %b : !bvec.vec<?x6xf64>
  %mm = bvec.mul %mx, %mn : !bvec.vec<?x6xf64>
  %sq = bvec.mul %a, %a : !bvec.vec<?x6xf64>
  %two = bvec.constant 2.0 : !bvec.vec<?x6xf64>
  %den = bvec.add %sq, %two : !bvec.vec<?x6xf64>
  %binary = bvec.div %mm, %den : !bvec.vec<?x6xf64>
  // reductions = sum(a) + mean(b) + max(a) - min(b) + |a|_1 + |b|_2 + <a, b>
  %r0 = bvec.reduce sum %a : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r1 = bvec.reduce mean %b : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r2 = bvec.reduce max %a : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r3 = bvec.reduce min %b : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r4 = bvec.norm %a, p = 1 : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r5 = bvec.norm %b, p = 2 : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %r6 = bvec.vec_mul_vec %a, %b : !bvec.vec<?x6xf64>, !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
  %q0 = bvec.add %r0, %r1 : !bvec.scalar<?xf64>
  %q1 = bvec.add %q0, %r2 : !bvec.scalar<?xf64>
  %q2 = bvec.sub %q1, %r3 : !bvec.scalar<?xf64>
  %q3 = bvec.add %q2, %r4 : !bvec.scalar<?xf64>
  %q4 = bvec.add %q3, %r5 : !bvec.scalar<?xf64>
  %reductions = bvec.add %q4, %r6 : !bvec.scalar<?xf64>
  // products = (<a, b> * b) . P[h]
  %sb = bvec.scal_mul_vec %r6, %b : !bvec.scalar<?xf64>, !bvec.vec<?x6xf64> -> !bvec.vec<?x6xf64>
  %products = bvec.vec_mul_mat %sb, %m : !bvec.vec<?x6xf64>, !bvec.mat<?x6x4xf64> -> !bvec.vec<?x4xf64>
  // outer = a[3:6] (x) products
  %tail = bvec.slice %a[3] : !bvec.vec<?x6xf64> -> !bvec.vec<?x3xf64>
  %outer = bvec.vec_outer_vec %tail, %products : !bvec.vec<?x3xf64>, !bvec.vec<?x4xf64> -> !bvec.mat<?x3x4xf64>
  bvec.return %unary, %binary, %reductions, %products, %outer : !bvec.vec<?x6xf64>, !bvec.vec<?x6xf64>, !bvec.scalar<?xf64>, !bvec.vec<?x4xf64>, !bvec.mat<?x3x4xf64>
}
