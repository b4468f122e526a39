// RUN: kge-opt %s -pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts))' \
// RUN:   | kge-translate --mlir-to-ptx | FileCheck %s
// RUN: kge-opt %s -pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts))' \
// RUN:   | kge-translate --mlir-to-ptx --ptx-chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: kge-opt %s -pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts))' \
// RUN:   | sed 's/gpu.module @kernels/gpu.module @kernels [#nvvm.target<chip = "sm_90">, #nvvm.target<chip = "sm_80">]/' \
// RUN:   | kge-translate --mlir-to-ptx | FileCheck %s --check-prefix=TWO
// RUN: not kge-translate --mlir-to-ptx %S/Inputs/no-gpu-module.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not kge-translate --mlir-to-ptx %S/Inputs/bare-gpu-module.mlir 2>&1 | FileCheck %s --check-prefix=NOTLOWERED
// RUN: %if ptxas %{ kge-opt %s -pass-pipeline='builtin.module(gpu.module(convert-gpu-to-nvvm,reconcile-unrealized-casts))' \
// RUN:   | kge-translate --mlir-to-ptx > %t.ptx && %ptxas -arch=sm_90 --compile-only %t.ptx -o %t.o %}

// gpu.modules become PTX for sm_90 unless told otherwise; external device
// functions are declared `.extern .func`. Kernels for sm_90 and newer wait
// for the grids before them at their entry (programmatic dependent launch);
// a module that also targets an older chip (one IR for every target) does
// not.

// CHECK: // gpu.module @kernels
// CHECK: .target sm_90
// CHECK: .extern .func  (.param .b32 func_retval0) helper
// CHECK: .visible .entry scale(
// CHECK-NOT: {{(ld|st)\.[^p]|call}}
// CHECK: griddepcontrol.wait;
// CHECK: call.uni (retval0), helper
// SM80: .target sm_80
// SM80-NOT: griddepcontrol
// TWO: .target sm_90
// TWO-NOT: griddepcontrol
// TWO: .target sm_80
// TWO-NOT: griddepcontrol
// NOTLOWERED: bare-gpu-module.mlir:4:5: error: unsupported GPU operation: gpu.func
// EMPTY: no-gpu-module.mlir:0:0: error: the module has no gpu.module to serialize
module attributes {gpu.container_module} {
  gpu.module @kernels {
    llvm.func @helper(i32) -> i32
    gpu.func @scale(%a: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %i = arith.index_cast %tid : index to i32
      %j = llvm.call @helper(%i) : (i32) -> i32
      %k = arith.index_cast %j : i32 to index
      %v = memref.load %a[%k] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %a[%tid] : memref<?xf32>
      gpu.return
    }
  }
}
