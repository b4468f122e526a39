// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=carry-floats=0 -convert-bvec-to-gpu | FileCheck %s --check-prefix=RELOAD
// RUN: kge-opt %s -split-input-file -bvec-fuse=carry-floats=31 -convert-bvec-to-gpu | FileCheck %s --check-prefix=RELOAD

// Vectors that a later stage reads again stay in registers: TransH's stage 1
// needs `d + r` and `w` after the reduction `w . d` of stage 0. With static
// lengths and 32 floats per lane (2 vectors x 4 edges x 1 chunk of 4) within
// carry_floats, stage 0 computes them for every chunk (no loop: each chunk
// is its own code), and stage 1 reads no row from memory. With a smaller
// budget every stage loops over the length and loads its rows again.

// CHECK-LABEL: gpu.func @transh
// CHECK-NOT: scf.for
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: vector.load %arg2
// CHECK: gpu.shuffle xor
// CHECK-NOT: vector.load
// CHECK-NOT: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: gpu.return

// RELOAD-LABEL: gpu.func @transh
// RELOAD: scf.for
// RELOAD: gpu.shuffle xor
// RELOAD: scf.for
// RELOAD: vector.load %arg0
// RELOAD: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
bvec.func @transh(%Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>,
                  %Pv: !bvec.table<?x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %w = bvec.gather_vec %Pv[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %proj = bvec.vec_mul_vec %w, %diff : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %scaled = bvec.scal_mul_vec %proj, %w : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %sum = bvec.add %diff, %rel : !bvec.vec<?x64xf32>
  %out = bvec.sub %sum, %scaled : !bvec.vec<?x64xf32>
  %score = bvec.norm %out, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Three stages and two length classes: stage 0 keeps d, rel and h (length
// 128) and s (length 64, a loop of its own that only loads it); stage 1 keeps
// m; stages 1 and 2 load nothing.

// CHECK-LABEL: gpu.func @carried
// CHECK-NOT: scf.for
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: gpu.shuffle xor
// CHECK: vector.load %arg2
// CHECK-NOT: vector.load %arg{{[01]}}
// CHECK-NOT: scf.for
// CHECK: gpu.return

// RELOAD-LABEL: gpu.func @carried
// RELOAD: gpu.shuffle xor
// RELOAD: scf.for
// RELOAD: vector.load %arg0
// RELOAD: gpu.shuffle xor
// RELOAD: scf.for
// RELOAD: vector.load %arg0
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

// -----

// Nothing is carried into a stage with matrix products (they need the
// registers): TransR's stage 1 loads `rel` after the product.

// CHECK-LABEL: gpu.func @transr
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %arg1
// CHECK: gpu.return
bvec.func @transr(%Eemb: !bvec.table<?x64xf32>, %Remb: !bvec.table<?x64xf32>,
                  %Pm: !bvec.table<?x64x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.gather_mat %Pm[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %projected = bvec.vec_mul_mat %diff, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %sum = bvec.add %projected, %rel : !bvec.vec<?x64xf32>
  %score = bvec.norm %sum, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Carried vectors end before a stage with matrix products: `d` and `rel`
// are carried from stage 0 into stage 1 (which materializes `y`), and
// stage 2, after the product, loads the rows of `d` again.

// CHECK-LABEL: gpu.func @across
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: gpu.shuffle xor
// CHECK-NOT: vector.load %arg{{[01]}}
// CHECK: nvvm.mma.sync
// CHECK: scf.for
// CHECK: vector.load %arg0
// CHECK: gpu.return
bvec.func @across(%E: !bvec.table<?x64xf32>, %R: !bvec.table<?x64xf32>,
                  %M: !bvec.table<?x64x64xf32>, %h: !bvec.indices<?xi64>,
                  %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.gather_mat %M[%r] : !bvec.table<?x64x64xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %d = bvec.sub %head, %tail : !bvec.vec<?x64xf32>
  %n = bvec.norm %d, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  %nr = bvec.scal_mul_vec %n, %rel : !bvec.scalar<?xf32>, !bvec.vec<?x64xf32> -> !bvec.vec<?x64xf32>
  %y = bvec.add %nr, %d : !bvec.vec<?x64xf32>
  %p = bvec.vec_mul_mat %y, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %z = bvec.add %p, %d : !bvec.vec<?x64xf32>
  %score = bvec.norm %z, p = 2 : !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
