// RUN: kge-opt %s --split-input-file --convert-bvec-to-tile=matrices | FileCheck %s
// RUN: kge-opt %s --split-input-file -kge-lower-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: kge-opt %s --split-input-file -kge-lower-to-gpu=fuse-matrix-products=1 | FileCheck %s --check-prefix=FUSED
// RUN: kge-opt %s --split-input-file -kge-lower-to-gpu=negative=t | FileCheck %s --check-prefix=FUSED
// RUN: not kge-opt %s --split-input-file --convert-bvec-to-tile="matrices shared-negatives=t" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=BOTH

// BOTH: error: convert-bvec-to-tile takes either shared-negatives or matrices

// TransR: the difference of the two gathered rows times the relation's
// matrix (a matrix per row's key), the relation's row added along j (a pair
// operand), the squares summed by the reduce output, the root taken by
// finalize; the score stays the function's result (kge.result), every
// parameter keeps the names of its dimensions (kge.dims).
// CHECK-LABEL: func.func @transr
// CHECK-SAME: %[[E:[^:]*]]: memref<?x?xf32> {kge.dims = ["N_Eemb", "D_Eemb"], kge.param = "Eemb"}, %[[R:[^:]*]]: memref<?x?xf32> {kge.dims = ["N_Remb", "D_Remb"], kge.param = "Remb"}, %[[P:[^:]*]]: memref<?x?x?xf32> {kge.dims = ["N_Pm", "D_Eemb", "D_Remb"], kge.param = "Pm"}
// CHECK-SAME: %[[H:[^:]*]]: memref<?xi64> {kge.dims = ["B"], kge.param = "h"}, %[[RI:[^:]*]]: memref<?xi64> {kge.dims = ["B"], kge.param = "r"}, %[[T:[^:]*]]: memref<?xi64> {kge.dims = ["B"], kge.param = "t"}, %[[S:[^:]*]]: memref<?xf32> {kge.dims = ["B"], kge.param = "score", kge.result}
// CHECK: tile.task ins(%[[E]], %[[E]], %[[P]], %[[R]] : {{.*}}) outs(%[[S]] : memref<?xf32>) gathers(%[[H]], %[[T]], %[[RI]], %[[RI]] : {{.*}}) maps [#[[IK:.*]], #[[IK]], #[[IKJ:.*]], #[[IJ:.*]]] accumulate add output reduce
// CHECK: ^bb0(%[[EH:.*]]: f32, %[[ET:.*]]: f32, %[[W:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[D:.*]] = arith.subf %[[EH]], %[[ET]] : f32
// CHECK: arith.mulf %[[D]], %[[W]] : f32
// CHECK: } project {
// CHECK: ^bb0(%[[ACC:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %[[REL:.*]]: f32):
// CHECK: %[[X:.*]] = arith.addf %[[ACC]], %[[REL]] : f32
// CHECK: arith.mulf %[[X]], %[[X]] : f32
// CHECK: } finalize {
// CHECK: math.sqrt
// GPU-LABEL: gpu.module @transr_kernels
// GPU: llvm.func @transr_mma
// GPU: llvm.func @transr_finalize
// FUSED-LABEL: gpu.module @transr_kernels
// FUSED-NOT: transr_finalize
// FUSED: llvm.func @transr(
bvec.func @transr(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %Pm: !bvec.table<?x?x?xf32>,
                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %proj = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %projected = bvec.vec_mul_mat %diff, %proj : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %translated = bvec.add %projected, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %translated, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// RESCAL in bf16 tables, negated: the tail's row a pair operand, widened;
// no root, the negation in finalize.
// CHECK-LABEL: func.func @rescal
// CHECK: maps [#{{.*}}, #{{.*}}, #{{.*}}] accumulate add output reduce
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %{{.*}}: bf16):
// CHECK-DAG: arith.extf %[[A]] : bf16 to f32
// CHECK-DAG: arith.extf %[[B]] : bf16 to f32
// CHECK: } project {
// CHECK: ^bb0(%[[ACC:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %[[TAIL:.*]]: bf16):
// CHECK: %[[TW:.*]] = arith.extf %[[TAIL]] : bf16 to f32
// CHECK: arith.mulf %[[ACC]], %[[TW]] : f32
// CHECK: } finalize {
// CHECK: arith.negf
bvec.func @rescal(%Eemb: !bvec.table<?x?xbf16>, %Pm: !bvec.table<?x?x?xbf16>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xbf16>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %hm = bvec.vec_mul_mat %head, %rel : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %dot = bvec.vec_mul_vec %hm, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  %score = bvec.neg %dot : !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}

// -----

// Left to the fused kernel: no matrix product (DistMult), two of them, a
// mean, a reduction feeding a vector of the projected side.
// CHECK-LABEL: bvec.func @distmult
// CHECK-LABEL: bvec.func @two_products
// CHECK-LABEL: bvec.func @mean
bvec.func @distmult(%E: !bvec.table<?x?xf32>, %R: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                    %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %b = bvec.gather_vec %R[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %ab = bvec.mul %a, %b : !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %ab, %c : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

bvec.func @two_products(%E: !bvec.table<?x?xf32>, %P: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                        %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %c = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %pa = bvec.vec_mul_mat %a, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %pc = bvec.vec_mul_mat %c, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %s = bvec.vec_mul_vec %pa, %pc : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

bvec.func @mean(%E: !bvec.table<?x?xf32>, %P: !bvec.table<?x?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
                %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %a0 = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %a1 = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %a = bvec.sub %a0, %a1 : !bvec.vec<?x?xf32>
  %unused = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %m = bvec.gather_mat %P[%r] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %pa = bvec.vec_mul_mat %a, %m : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %s = bvec.reduce mean %pa : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// TransR on bf16 tables keeps the fused kernel: its factor h - t would be
// rounded to bf16 on the tensor cores, where the function computes in f32.
// CHECK-LABEL: bvec.func @transr_bf16
bvec.func @transr_bf16(%Eemb: !bvec.table<?x?xbf16>, %Remb: !bvec.table<?x?xbf16>, %Pm: !bvec.table<?x?x?xbf16>,
                       %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xbf16>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %proj = bvec.gather_mat %Pm[%r] : !bvec.table<?x?x?xbf16>, !bvec.indices<?xi64> -> !bvec.mat<?x?x?xf32>
  %diff = bvec.sub %head, %tail : !bvec.vec<?x?xf32>
  %projected = bvec.vec_mul_mat %diff, %proj : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
  %translated = bvec.add %projected, %rel : !bvec.vec<?x?xf32>
  %score = bvec.norm %translated, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
