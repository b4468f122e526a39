// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu | FileCheck %s
// RUN: kge-opt %s --split-input-file --convert-tile-to-gpu="block-m=32 block-n=32 block-k=8 thread-m=2 thread-n=2" \
// RUN:   | FileCheck %s --check-prefix=NARROW

// Float sums into row groups on CUDA cores, each thread's run of four
// columns of a row as one vector reduction where all four are stored and
// the output's rows are aligned to four floats; otherwise column by column.
// Runs of one column (thread-n=2: width 1) keep the scalar atomics.
// CHECK-LABEL: gpu.func @messages(
// CHECK: arith.remui %{{.*}}, %c4
// CHECK: scf.if %{{.*}} {
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.global.v4.f32.add [$0], {$1, $2, $3, $4};", "l,f,f,f,f,~{memory}"
// CHECK: } else {
// CHECK: memref.atomic_rmw addf
// NARROW-LABEL: gpu.func @messages(
// NARROW-NOT: red.global.v
// NARROW: memref.atomic_rmw addf
#ik = affine_map<(i, j, k) -> (i, k)>
#ij = affine_map<(i, j, k) -> (i, j)>
func.func @messages(%a: memref<?x1xf32> {kge.param = "a"}, %rows: memref<?x?xf32> {kge.param = "rows"},
                    %src: memref<?xi32> {kge.param = "src"}, %dst: memref<?xi32> {kge.param = "dst"},
                    %out: memref<?x?xf32> {kge.param = "out"}) {
  tile.task ins(%a, %rows : memref<?x1xf32>, memref<?x?xf32>) keys(%dst : memref<?xi32>)
      outs(%out : memref<?x?xf32>) gathers(%src : memref<?xi32>) maps [#ik, #ij]
      accumulate add output aggregate {gathered = [[1, 0]]} inner {
  ^bb0(%x: f32, %y: f32):
    %p = arith.mulf %x, %y : f32
    tile.yield %p : f32
  }
  return
}

// -----

// On tensor cores each lane holds pairs of adjacent columns: two per
// vector reduction. Max groups keep their integer atomics.
// CHECK-LABEL: gpu.func @segment_sum_mma_long(
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "red.global.v2.f32.add [$0], {$1, $2};", "l,f,f,~{memory}"
// CHECK-LABEL: gpu.func @segment_sum_t1_mma_long(
// CHECK-NOT: red.global.v
// CHECK: llvm.atomicrmw max
#a = affine_map<(i, j, k) -> (i, k)>
#w = affine_map<(i, j, k) -> (i, k, j)>
#n = affine_map<(i, j, k) -> (i)>
func.func @segment_sum(%x: memref<?x?xf32> {kge.param = "x"}, %w: memref<?x?x?xf32> {kge.param = "w"},
                       %norm: memref<?xf32> {kge.param = "norm"}, %src: memref<?xi32> {kge.param = "src"},
                       %dst: memref<?xi32> {kge.param = "dst"}, %t: memref<?xi32> {kge.param = "t"},
                       %out: memref<?x?xf32> {kge.param = "out"}) {
  tile.task ins(%x, %w, %norm : memref<?x?xf32>, memref<?x?x?xf32>, memref<?xf32>) keys(%dst : memref<?xi32>)
      outs(%out : memref<?x?xf32>) gathers(%src, %t : memref<?xi32>, memref<?xi32>) maps [#a, #w, #n]
      accumulate add output aggregate {gathered = [[0, 0], [1, 0]]} inner {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    tile.yield %m : f32
  } project {
  ^bb0(%v: f32, %i: index, %j: index, %s: f32):
    %m = arith.mulf %v, %s : f32
    tile.yield %m : f32
  }
  tile.task ins(%x, %w, %norm : memref<?x?xf32>, memref<?x?x?xf32>, memref<?xf32>) keys(%dst : memref<?xi32>)
      outs(%out : memref<?x?xf32>) gathers(%src, %t : memref<?xi32>, memref<?xi32>) maps [#a, #w, #n]
      accumulate add output aggregate {aggregate = 2 : i32, gathered = [[0, 0], [1, 0]]} inner {
  ^bb0(%p: f32, %q: f32, %r: f32):
    %m = arith.mulf %p, %q : f32
    tile.yield %m : f32
  }
  return
}
