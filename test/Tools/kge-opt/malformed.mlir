// RUN: not kge-opt %s -split-input-file 2>&1 | FileCheck %s

// Malformed or ill-typed bvec IR: a diagnostic with a location, a non-zero
// exit, never a crash.

// CHECK-NOT: PLEASE submit a bug report
// CHECK: malformed.mlir:[[# @LINE + 2]]:29: error: expected ']'
bvec.func @missing_bracket(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.vec<?x4xf32>) {
  %v = bvec.gather_vec %E[%h : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  bvec.return %v : !bvec.vec<?x4xf32>
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:45: error: expected non-function type
bvec.func @truncated_type(%E: !bvec.table<?x>) -> (s: !bvec.scalar<?xf32>) {
  bvec.return
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 2]]:8: error: custom op 'bvec.frobnicate' is unknown
bvec.func @unknown_op(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %s = bvec.frobnicate %E : !bvec.table<?x4xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 2]]:18: error: use of undeclared SSA value name
bvec.func @undefined_value(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %s = bvec.norm %nowhere, p = 2 : !bvec.vec<?x4xf32> -> !bvec.scalar<?xf32>
  bvec.return %s : !bvec.scalar<?xf32>
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 2]]:8: error: block with no terminator
bvec.func @no_terminator(%E: !bvec.table<?x4xf32>) -> (s: !bvec.scalar<?xf32>) {
  %c = bvec.constant 1.0 : !bvec.scalar<?xf32>
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 3]]:18: error: use of value '%v' expects different type than prior uses: '!bvec.vec<?x8xf32>' vs '!bvec.vec<?x4xf32>'
bvec.func @type_clash(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>) -> (s: !bvec.scalar<?xf32>) {
  %v = bvec.gather_vec %E[%h] : !bvec.table<?x4xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf32>
  %n = bvec.norm %v, p = 2 : !bvec.vec<?x8xf32> -> !bvec.scalar<?xf32>
  bvec.return %n : !bvec.scalar<?xf32>
}

// -----

// CHECK: malformed.mlir:[[# @LINE + 1]]:1: error: 'bvec.return' op expects parent op 'bvec.func'
bvec.return
