// RUN: kge-opt %s --split-input-file -pass-pipeline='builtin.module(gpu.module(kge-grid-constant-arguments))' \
// RUN:   -verify-diagnostics | FileCheck %s

// The last two arguments become 128-byte grid constants; the attribute goes.
// CHECK-LABEL: llvm.func @k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
// CHECK-NOT: kge.grid_constants
gpu.module @m {
  llvm.func @k(%data: !llvm.ptr, %a: !llvm.ptr, %b: !llvm.ptr) attributes {kge.grid_constants = 2 : i32, nvvm.kernel} {
    llvm.return
  }
}

// -----

gpu.module @m {
  // expected-error @below {{kge.grid_constants counts 2 trailing pointer arguments; argument 0 is not one}}
  llvm.func @k(%n: i64, %a: !llvm.ptr) attributes {kge.grid_constants = 2 : i32, nvvm.kernel} {
    llvm.return
  }
}
