//===- LoopBuilder.h - loop-nest helpers for bvec-to-scf --------*- C++ -*-===//
//
// Private helpers shared by the bvec-to-scf pattern files: buffer sizes,
// allocation and loop nests over memrefs.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_LIB_CONVERSION_BATCHEDVECTORTOSCF_LOOPBUILDER_H
#define KGE_LIB_CONVERSION_BATCHEDVECTORTOSCF_LOOPBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir {
namespace kge {
namespace loops {

/// Name of the argument attribute that marks an input parameter of a
/// lowered function, and of the one that marks an output (result) buffer.
inline constexpr llvm::StringLiteral kParamAttrName = "kge.param";
inline constexpr llvm::StringLiteral kResultAttrName = "kge.result";
/// Name of the attribute the pass puts on constants of dynamic item sizes
/// before converting them: one entry per item dimension, its static size
/// or [argument number, dimension] of the table dimension that gives it.
inline constexpr llvm::StringLiteral kItemSizesAttrName = "kge.item_sizes";

/// Size of dimension `dim` of `memref` as an index value.
Value dimSize(OpBuilder &b, Location loc, Value memref, unsigned dim);

/// Sizes of all dimensions of `memref`.
SmallVector<Value> sizes(OpBuilder &b, Location loc, Value memref);

/// Allocates a buffer of `type` whose dimensions have the given `sizes`
/// (only the dynamic ones are used).
Value alloc(OpBuilder &b, Location loc, MemRefType type, ValueRange sizes);

/// Builds a loop nest over `[0, sizes[i])` and calls `body` with the
/// induction variables.
void forEach(OpBuilder &b, Location loc, ValueRange sizes,
             function_ref<void(OpBuilder &, Location, ValueRange)> body);

/// Builds `acc = init; for i in [0, upper): acc = step(i, acc)` and returns
/// the final accumulator.
Value reduce(OpBuilder &b, Location loc, Value upper, Value init,
             function_ref<Value(OpBuilder &, Location, Value, Value)> step);

/// The batch size of the enclosing lowered function: the leading size of
/// its first output buffer.
FailureOr<Value> functionBatchSize(OpBuilder &b, Location loc, Operation *op);

/// A floating-point constant of `type`.
Value floatConstant(OpBuilder &b, Location loc, Type type, double value);

} // namespace loops
} // namespace kge
} // namespace mlir

#endif // KGE_LIB_CONVERSION_BATCHEDVECTORTOSCF_LOOPBUILDER_H
