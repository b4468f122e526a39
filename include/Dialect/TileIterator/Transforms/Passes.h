//===- Passes.h - tile transformation passes --------------------*- C++ -*-===//

#ifndef KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_H
#define KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_H

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace tile {

#define GEN_PASS_DECL
#include "Dialect/TileIterator/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/TileIterator/Transforms/Passes.h.inc"

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_TRANSFORMS_PASSES_H
