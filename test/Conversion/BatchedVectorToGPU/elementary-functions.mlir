// RUN: kge-opt %s -split-input-file -bvec-fuse -convert-bvec-to-gpu | FileCheck %s
// RUN: kge-opt %s -split-input-file -bvec-fuse=stage-repeats=0 -convert-bvec-to-gpu | FileCheck %s --check-prefix=STAGED
// RUN: kge-opt %s -split-input-file -kge-lower-to-gpu | kge-translate --split-input-file --mlir-to-ptx | FileCheck %s --check-prefix=PTX

// Sines and cosines of vectors are expanded in arith operations, the sine
// and the cosine of one chunk from one argument reduction. The chunk loop
// runs with the Cody-Waite reduction alone and carries whether some
// argument was out of its range; the warp runs the loop again, with the
// Payne-Hanek slow path behind an unlikely branch per chunk, only when one
// was. No libdevice call, no local memory.

// CHECK-LABEL: gpu.func @rotation
// CHECK: %[[FAST:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %false) -> (i1)
// CHECK: %[[PHASE:.*]] = vector.load %arg1
// CHECK: llvm.intr.fma
// CHECK: vector.reduction <or>
// CHECK-NOT: scf.if %{{.*}} -> (vector<4xf32>, vector<4xi32>)
// CHECK: scf.yield %{{.*}} : i1
// CHECK: %[[ANY:.*]] = nvvm.vote.sync  any %{{.*}}, %[[FAST]] -> i1
// CHECK: %[[AGAIN:.*]] = llvm.intr.expect %[[ANY]], %{{.*}} : i1
// CHECK: scf.if %[[AGAIN]] {
// CHECK: scf.for
// CHECK: %[[SLOW:.*]] = llvm.intr.expect %{{.*}}, %{{.*}} : i1
// CHECK: scf.if %[[SLOW]] -> (vector<4xf32>, vector<4xi32>)
// CHECK: arith.mului_extended
// CHECK: gpu.return
// CHECK-NOT: math.sin
// CHECK-NOT: math.cos

// Loops that stage rows synchronize the block in every chunk: the slow path
// stays inline, with no rerun.
// STAGED-LABEL: gpu.func @rotation
// STAGED-NOT: nvvm.vote.sync
// STAGED: scf.if %{{.*}} -> (vector<4xf32>, vector<4xi32>)
// STAGED-NOT: nvvm.vote.sync
// STAGED: gpu.return

// PTX-NOT: __nv_sinf
// PTX-NOT: __nv_cosf
// PTX-NOT: .local
// PTX: .entry rotation(
// PTX: vote.sync.any.pred
bvec.func @rotation(%E: !bvec.table<?x128xf32>, %P: !bvec.table<?x128xf32>,
                    %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>)
    -> (re: !bvec.vec<?x128xf32>, im: !bvec.vec<?x128xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %p = bvec.gather_vec %P[%r] : !bvec.table<?x128xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x128xf32>
  %c = bvec.cos %p : !bvec.vec<?x128xf32>
  %s = bvec.sin %p : !bvec.vec<?x128xf32>
  %re = bvec.mul %e, %c : !bvec.vec<?x128xf32>
  %im = bvec.mul %e, %s : !bvec.vec<?x128xf32>
  bvec.return %re, %im : !bvec.vec<?x128xf32>, !bvec.vec<?x128xf32>
}

// -----

// Carried vectors computed in a loop of sines are results of the rerun too:
// the later stage reads the rerun's values.
// CHECK-LABEL: gpu.func @carried_rotation
// CHECK: nvvm.vote.sync
// CHECK: %[[CHOICE:.*]]:{{[0-9]+}} = scf.if %{{.*}} -> (vector<4xf32>, vector<4xf32>
// CHECK: gpu.shuffle xor
// CHECK: arith.mulf %{{.*}}, %[[CHOICE]]#
bvec.func @carried_rotation(%E: !bvec.table<?x32xf32>, %P: !bvec.table<?x32xf32>,
                            %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %e = bvec.gather_vec %E[%h] : !bvec.table<?x32xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x32xf32>
  %p = bvec.gather_vec %P[%r] : !bvec.table<?x32xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x32xf32>
  %s = bvec.sin %p : !bvec.vec<?x32xf32>
  %rotated = bvec.mul %e, %s : !bvec.vec<?x32xf32>
  %n = bvec.norm %rotated, p = 2 : !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  %scaled = bvec.scal_mul_vec %n, %rotated : !bvec.scalar<?xf32>, !bvec.vec<?x32xf32> -> !bvec.vec<?x32xf32>
  %score = bvec.reduce sum %scaled : !bvec.vec<?x32xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
