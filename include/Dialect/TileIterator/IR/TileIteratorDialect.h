//===- TileIteratorDialect.h - tile dialect ---------------------*- C++ -*-===//
//
// The `tile` dialect: matrix-multiplication-like tasks (GAMUT) and their tile
// iterators. Include this header to use the dialect and its operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/TileIterator/IR/TileIteratorOpsDialect.h.inc"
#include "Dialect/TileIterator/IR/TileIteratorEnums.h.inc"

#define GET_OP_CLASSES
#include "Dialect/TileIterator/IR/TileIteratorOps.h.inc"

namespace mlir {
namespace tile {

/// The neutral element of `combiner` for values of `type` (an integer or
/// float type); null for `custom`.
TypedAttr getCombinerIdentity(Combiner combiner, Type type);

/// Builds `combiner` (not `custom`) of `lhs` and `rhs`: addition,
/// multiplication, maximum or minimum; float additions and multiplications
/// carry `fastMath`.
Value buildCombination(OpBuilder &b, Location loc, Combiner combiner,
                       Value lhs, Value rhs,
                       arith::FastMathFlags fastMath = arith::FastMathFlags::none);

/// Clones the single block of a region of a task at `b`'s insertion point
/// with its arguments replaced by `arguments`; returns the value it
/// yields. `onClone` sees every cloned operation.
Value inlineTaskRegion(OpBuilder &b, Region &region, ValueRange arguments,
                       llvm::function_ref<void(Operation *)> onClone = nullptr);

/// `task`'s accumulation of `rhs` into `lhs`: its combine region when
/// custom, else buildCombination (with `fastMath`).
Value buildAccumulation(OpBuilder &b, Location loc, TaskOp task, Value lhs,
                        Value rhs,
                        arith::FastMathFlags fastMath = arith::FastMathFlags::none,
                        llvm::function_ref<void(Operation *)> onClone = nullptr);

/// The indices of pair (i, j) in `task`'s dense output (its output map).
SmallVector<Value, 2> getDenseOutputIndices(TaskOp task, Value i, Value j);

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
