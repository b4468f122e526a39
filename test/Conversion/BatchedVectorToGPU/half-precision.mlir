// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=stage-repeats=0 -convert-bvec-to-gpu | FileCheck %s --check-prefix=STAGED
// RUN: kge-opt %s -split-input-file -kge-lower-to-gpu=fuse-matrix-products=1 | kge-translate --split-input-file --mlir-to-ptx | FileCheck %s --check-prefix=PTX

// Tables in half precision are read 4 elements (8 bytes) per lane and
// widened in registers; the kernel computes in f32. Staged rows keep the
// table's element type in shared memory.

// CHECK-LABEL: gpu.func @transe
// CHECK-SAME: %arg0: memref<?x128xbf16>, %arg1: memref<?x128xf16>
// CHECK: %[[H:.*]] = vector.load %arg0[{{.*}}] {alignment = 8 : i64} : memref<?x128xbf16>, vector<4xbf16>
// CHECK: arith.extf %[[H]] : vector<4xbf16> to vector<4xf32>
// CHECK: %[[R:.*]] = vector.load %arg1[{{.*}}] {alignment = 8 : i64} : memref<?x128xf16>, vector<4xf16>
// CHECK: arith.extf %[[R]] : vector<4xf16> to vector<4xf32>

// STAGED-LABEL: gpu.func @transe
// STAGED: memref.view {{.*}} to memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>
// STAGED: vector.store %{{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
// STAGED: llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> vector<4xbf16>
// STAGED: arith.extf %{{.*}} : vector<4xbf16> to vector<4xf32>

// PTX-LABEL: .entry transe(
// PTX: ld.global.v4.b16
// PTX: cvt.f32.bf16
// PTX: cvt.f32.f16
bvec.func @transe(%E: !bvec.table<?x128xbf16>, %R: !bvec.table<?x128xf16>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x128xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %rel = bvec.gather_vec %R[%r] : !bvec.table<?x128xf16>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x128xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %a = bvec.add %head, %rel : !bvec.vec<?x128xf32>
  %d = bvec.sub %a, %tail : !bvec.vec<?x128xf32>
  %score = bvec.norm %d, p = 2 : !bvec.vec<?x128xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Matrices in half precision: widened where they are loaded, on either
// path of the products.
// CHECK-LABEL: gpu.func @rescal
// CHECK: vector.load %arg1[{{.*}}] {alignment = 8 : i64} : memref<?x64x64xbf16>, vector<4xbf16>
// CHECK: arith.extf {{.*}} : vector<4xbf16> to vector<4xf32>
// CHECK: nvvm.mma.sync
// PTX-LABEL: .entry rescal(
// PTX: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32
bvec.func @rescal(%E: !bvec.table<?x64xf32>, %P: !bvec.table<?x64x64xbf16>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %E[%h] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x64x64xbf16>, !bvec.indices<?xi64> -> !bvec.mat<?x64x64xf32>
  %tail = bvec.gather_vec %E[%t] : !bvec.table<?x64xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x64xf32>
  %hm = bvec.vec_mul_mat %head, %m : !bvec.vec<?x64xf32>, !bvec.mat<?x64x64xf32> -> !bvec.vec<?x64xf32>
  %score = bvec.vec_mul_vec %hm, %tail : !bvec.vec<?x64xf32>, !bvec.vec<?x64xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
