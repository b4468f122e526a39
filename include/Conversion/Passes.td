//===- Passes.td - KGE conversion passes -------------------*- tablegen -*-===//

#ifndef KGE_CONVERSION_PASSES_TD
#define KGE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertBatchedVectorToSCF : Pass<"convert-bvec-to-scf", "ModuleOp"> {
  let summary = "Lower bvec functions to loops over memrefs (the CPU path)";
  let description = [{
    Lowers every `bvec.func` to a `func.func` over memrefs in
    destination-passing style: the arguments are the tables and index
    arrays, followed by one output memref per result. Each operation becomes
    a loop nest over the batch and the item dimensions writing a temporary
    buffer; temporaries are freed before the function returns. The batch
    size is read from the first output.

    The lowered function carries `llvm.emit_c_interface` so that the CPU
    runner can call it through MLIR's ExecutionEngine, and each argument
    carries `kge.param = "<name>"`.

    Example:

    ```mlir
    // Before
    bvec.func @dot(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>)
        -> (s: !bvec.scalar<?xf32>) { ... }
    // After
    func.func @dot(%E: memref<?x4xf32>, %h: memref<?xi64>, %s: memref<?xf32>)
        attributes {llvm.emit_c_interface} { ... }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

#endif // KGE_CONVERSION_PASSES_TD
