// RUN: kge-opt %examples/bvec/transr.mlir -kge-lower-to-cpu | FileCheck %s

// The CPU pipeline leaves only the LLVM dialect: the function and its C
// interface wrapper, which the CPU runner calls.

// CHECK-NOT: bvec.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK: llvm.func @transr(
// CHECK: llvm.call @malloc
// CHECK: llvm.intr.sqrt
// CHECK: llvm.call @free
// CHECK: llvm.func @_mlir_ciface_transr(
