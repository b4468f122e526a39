//===- TileIteratorDialect.h - tile dialect ---------------------*- C++ -*-===//
//
// The `tile` dialect: matrix-multiplication-like tasks (GAMUT) and their tile
// iterators. Include this header to use the dialect and its operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
#define KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
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

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_IR_TILEITERATORDIALECT_H
