//===- TileIteratorToSCF.h - tile to loops ----------------------*- C++ -*-===//

#ifndef KGE_CONVERSION_TILEITERATORTOSCF_TILEITERATORTOSCF_H
#define KGE_CONVERSION_TILEITERATORTOSCF_TILEITERATORTOSCF_H

#include "mlir/Pass/Pass.h"

namespace mlir {
class OpBuilder;

namespace tile {
class TaskOp;
} // namespace tile

namespace kge {

#define GEN_PASS_DECL_CONVERTTILEITERATORTOSCF
#include "Conversion/Passes.h.inc"

/// Replaces `task` with the loop nest that computes it (the reference
/// semantics of `tile.task`).
void lowerTaskToLoops(OpBuilder &builder, tile::TaskOp task);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_TILEITERATORTOSCF_TILEITERATORTOSCF_H
