//===- BatchedVectorDialect.h - bvec dialect --------------------*- C++ -*-===//
//
// The `bvec` dialect: batched-vector operators of KGE score functions
// (cuKE, Table III). Include this header to use the dialect, its types and
// its operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_H
#define KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/BatchedVector/IR/BatchedVectorOpsDialect.h.inc"
#include "Dialect/BatchedVector/IR/BatchedVectorEnums.h.inc"
#include "Dialect/BatchedVector/IR/BatchedVectorTypeInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/BatchedVector/IR/BatchedVectorOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "Dialect/BatchedVector/IR/BatchedVectorOps.h.inc"

namespace mlir {
namespace bvec {

/// Prints a dimension: the number or `?`.
std::string dimToString(int64_t dim);

/// Returns the batched value type `type` with its batch size replaced.
Type cloneWithBatchSize(Type type, int64_t batchSize);

/// The batch of `item`-shaped `element`s (none: scalars, one size:
/// vectors, two: matrices) with the batch size of the batched type `like`.
Type batchedType(Type like, ArrayRef<int64_t> item, Type element);

} // namespace bvec
} // namespace mlir

#endif // KGE_DIALECT_BATCHEDVECTOR_IR_BATCHEDVECTORDIALECT_H
