// RUN: kge-opt %s | kge-opt | FileCheck %s
// RUN: kge-opt %s -mlir-print-op-generic | kge-opt | FileCheck %s

// Every operation and type of the bvec dialect, printed and parsed back.

// CHECK-LABEL: bvec.func @gathers(
// CHECK-SAME: %Eemb: !bvec.table<?x128xf32>, %Pm: !bvec.table<1345x128x64xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi32>)
// CHECK-SAME: -> (vec: !bvec.vec<?x128xf32>, mat: !bvec.mat<?x128x64xf32>)
bvec.func @gathers(%Eemb: !bvec.table<?x128xf32>, %Pm: !bvec.table<1345x128x64xf32>,
                   %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi32>)
    -> (vec: !bvec.vec<?x128xf32>, mat: !bvec.mat<?x128x64xf32>) {
  // CHECK: %[[V:.*]] = bvec.gather_vec %Eemb[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %v = bvec.gather_vec %Eemb[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  // CHECK: %[[M:.*]] = bvec.gather_mat %Pm[%r] : !bvec.table<1345x128x64xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x128x64xf32>
  %m = bvec.gather_mat %Pm[%r] : !bvec.table<1345x128x64xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x128x64xf32>
  // CHECK: bvec.return %[[V]], %[[M]] : !bvec.vec<?x128xf32>, !bvec.mat<?x128x64xf32>
  bvec.return %v, %m : !bvec.vec<?x128xf32>, !bvec.mat<?x128x64xf32>
}

// Gathers from half-precision tables widen their rows to f32.
// CHECK-LABEL: bvec.func @widening_gathers(
// CHECK: bvec.gather_vec %E[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
// CHECK: bvec.gather_mat %P[%h] : !bvec.table<?x8x8xf16>, !bvec.indices<?xi64> -> !bvec.mat<?x8x8xf32>
// CHECK: bvec.gather_vec %E[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xbf16>
bvec.func @widening_gathers(%E: !bvec.table<?x?xbf16>, %P: !bvec.table<?x8x8xf16>, %h: !bvec.indices<?xi64>)
    -> (v: !bvec.vec<?x?xf32>, m: !bvec.mat<?x8x8xf32>, raw: !bvec.vec<?x?xbf16>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%h] : !bvec.table<?x8x8xf16>, !bvec.indices<?xi64> -> !bvec.mat<?x8x8xf32>
  %raw = bvec.gather_vec %E[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xbf16>
  bvec.return %v, %m, %raw : !bvec.vec<?x?xf32>, !bvec.mat<?x8x8xf32>, !bvec.vec<?x?xbf16>
}

// CHECK-LABEL: bvec.func @elementwise(
bvec.func @elementwise(%E: !bvec.table<?x?xf64>, %h: !bvec.indices<37xi64>)
    -> (out: !bvec.vec<37x?xf64>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf64>, !bvec.indices<37xi64> -> !bvec.vec<37x?xf64>
  // CHECK: bvec.add %{{.*}}, %{{.*}} : !bvec.vec<37x?xf64>
  %0 = bvec.add %a, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.sub
  %1 = bvec.sub %0, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.mul
  %2 = bvec.mul %1, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.div
  %3 = bvec.div %2, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.max
  %4 = bvec.max %3, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.min
  %5 = bvec.min %4, %a : !bvec.vec<37x?xf64>
  // CHECK: bvec.neg %{{.*}} : !bvec.vec<37x?xf64>
  %6 = bvec.neg %5 : !bvec.vec<37x?xf64>
  // CHECK: bvec.abs
  %7 = bvec.abs %6 : !bvec.vec<37x?xf64>
  // CHECK: bvec.exp
  %8 = bvec.exp %7 : !bvec.vec<37x?xf64>
  // CHECK: bvec.log
  %9 = bvec.log %8 : !bvec.vec<37x?xf64>
  // CHECK: bvec.sqrt
  %10 = bvec.sqrt %9 : !bvec.vec<37x?xf64>
  // CHECK: bvec.tanh
  %11 = bvec.tanh %10 : !bvec.vec<37x?xf64>
  // CHECK: bvec.sigmoid
  %12 = bvec.sigmoid %11 : !bvec.vec<37x?xf64>
  // CHECK: bvec.sin
  %13 = bvec.sin %12 : !bvec.vec<37x?xf64>
  // CHECK: bvec.cos
  %14 = bvec.cos %13 : !bvec.vec<37x?xf64>
  bvec.return %14 : !bvec.vec<37x?xf64>
}

// CHECK-LABEL: bvec.func @products(
bvec.func @products(%E: !bvec.table<?x128xf32>, %P: !bvec.table<?x128x64xf32>,
                    %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>)
    -> (s: !bvec.scalar<?xf32>, v: !bvec.vec<?x64xf32>, o: !bvec.mat<?x128x64xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x128x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x128x64xf32>
  // CHECK: bvec.vec_mul_vec %{{.*}}, %{{.*}} : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  %dot = bvec.vec_mul_vec %a, %a : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.scal_mul_vec %{{.*}}, %{{.*}} : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32> -> !bvec.vec<?x128xf32>
  %scaled = bvec.scal_mul_vec %dot, %a : !bvec.scalar<?xf32>, !bvec.vec<?x128xf32> -> !bvec.vec<?x128xf32>
  // CHECK: bvec.vec_mul_mat %{{.*}}, %{{.*}} : !bvec.vec<?x128xf32>, !bvec.mat<?x128x64xf32> -> !bvec.vec<?x64xf32>
  %proj = bvec.vec_mul_mat %scaled, %m : !bvec.vec<?x128xf32>, !bvec.mat<?x128x64xf32> -> !bvec.vec<?x64xf32>
  // CHECK: bvec.vec_outer_vec %{{.*}}, %{{.*}} : !bvec.vec<?x128xf32>, !bvec.vec<?x64xf32> -> !bvec.mat<?x128x64xf32>
  %outer = bvec.vec_outer_vec %a, %proj : !bvec.vec<?x128xf32>, !bvec.vec<?x64xf32> -> !bvec.mat<?x128x64xf32>
  // CHECK: bvec.norm %{{.*}}, p = 1 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %n1 = bvec.norm %proj, p = 1 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.norm %{{.*}}, p = 2
  %n2 = bvec.norm %proj, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.reduce sum %{{.*}} : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  %sum = bvec.reduce sum %a : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.reduce mean
  %mean = bvec.reduce mean %a : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.reduce max
  %max = bvec.reduce max %a : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.reduce min
  %min = bvec.reduce min %a : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  // CHECK: bvec.slice %{{.*}}[64] : !bvec.vec<?x128xf32> -> !bvec.vec<?x64xf32>
  %half = bvec.slice %a[64] : !bvec.vec<?x128xf32> -> !bvec.vec<?x64xf32>
  // CHECK: bvec.constant 2.500000e+00 : !bvec.scalar<?xf32>
  %c = bvec.constant 2.5 : !bvec.scalar<?xf32>
  %0 = bvec.add %n1, %n2 : !bvec.scalar<?xf32>
  %1 = bvec.add %0, %sum : !bvec.scalar<?xf32>
  %2 = bvec.add %1, %mean : !bvec.scalar<?xf32>
  %3 = bvec.add %2, %max : !bvec.scalar<?xf32>
  %4 = bvec.add %3, %min : !bvec.scalar<?xf32>
  %5 = bvec.mul %4, %c : !bvec.scalar<?xf32>
  %6 = bvec.add %proj, %half : !bvec.vec<?x64xf32>
  bvec.return %5, %6, %outer : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32>, !bvec.mat<?x128x64xf32>
}

// Types with every element type and static or dynamic sizes.
// CHECK-LABEL: bvec.func @types(
// CHECK-SAME: !bvec.table<10x3xf16>, %B: !bvec.table<?x3xbf16>, %i: !bvec.indices<4xi32>)
// CHECK-SAME: -> (x: !bvec.vec<4x3xf16>, y: !bvec.scalar<4xbf16>)
bvec.func @types(%A: !bvec.table<10x3xf16>, %B: !bvec.table<?x3xbf16>, %i: !bvec.indices<4xi32>)
    -> (x: !bvec.vec<4x3xf16>, y: !bvec.scalar<4xbf16>) {
  %a = bvec.gather_vec %A[%i] : !bvec.table<10x3xf16>, !bvec.indices<4xi32> -> !bvec.vec<4x3xf16>
  %b = bvec.gather_vec %B[%i] : !bvec.table<?x3xbf16>, !bvec.indices<4xi32> -> !bvec.vec<4x3xbf16>
  %s = bvec.reduce sum %b : !bvec.vec<4x3xbf16> -> !bvec.scalar<4xbf16>
  bvec.return %a, %s : !bvec.vec<4x3xf16>, !bvec.scalar<4xbf16>
}

// Names that are keywords elsewhere are fine; attributes survive.
// CHECK-LABEL: bvec.func private @attributes(
// CHECK-SAME: -> (return: !bvec.scalar<?xf32>) attributes {kge.note = "kept"}
bvec.func private @attributes(%func: !bvec.table<?x8xf32>, %index: !bvec.indices<?xi64>)
    -> (return: !bvec.scalar<?xf32>) attributes {kge.note = "kept"} {
  %v = bvec.gather_vec %func[%index] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %s = bvec.norm %v, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// Operations of gradient functions: a per-edge input, sign, the transposed
// matrix product and the transposed slice.
// CHECK-LABEL: bvec.func @gradient_ops(
// CHECK-SAME: %d_score: !bvec.scalar<?xf32>)
bvec.func @gradient_ops(%Eemb: !bvec.table<?x8xf32>, %Pm: !bvec.table<?x8x6xf32>,
                        %h: !bvec.indices<?xi64>, %d_score: !bvec.scalar<?xf32>)
    -> (v: !bvec.vec<?x8xf32>, w: !bvec.vec<?x8xf32>) {
  %e = bvec.gather_vec %Eemb[%h] : !bvec.table<?x8xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x8xf32>
  %m = bvec.gather_mat %Pm[%h] : !bvec.table<?x8x6xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x8x6xf32>
  // CHECK: bvec.sign %{{.*}} : !bvec.vec<?x8xf32>
  %s = bvec.sign %e : !bvec.vec<?x8xf32>
  // CHECK: bvec.slice %{{.*}}[2] : !bvec.vec<?x8xf32> -> !bvec.vec<?x6xf32>
  %x = bvec.slice %s[2] : !bvec.vec<?x8xf32> -> !bvec.vec<?x6xf32>
  // CHECK: bvec.mat_mul_vec %{{.*}}, %{{.*}} : !bvec.mat<?x8x6xf32>, !bvec.vec<?x6xf32> -> !bvec.vec<?x8xf32>
  %y = bvec.mat_mul_vec %m, %x : !bvec.mat<?x8x6xf32>, !bvec.vec<?x6xf32> -> !bvec.vec<?x8xf32>
  // CHECK: bvec.pad %{{.*}}[1] : !bvec.vec<?x6xf32> -> !bvec.vec<?x8xf32>
  %p = bvec.pad %x[1] : !bvec.vec<?x6xf32> -> !bvec.vec<?x8xf32>
  // CHECK: bvec.scal_mul_vec %d_score
  %w = bvec.scal_mul_vec %d_score, %p : !bvec.scalar<?xf32>, !bvec.vec<?x8xf32> -> !bvec.vec<?x8xf32>
  bvec.return %y, %w : !bvec.vec<?x8xf32>, !bvec.vec<?x8xf32>
}
