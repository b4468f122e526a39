//===- Passes.h - graph transformation passes -------------------*- C++ -*-===//

#ifndef KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_H
#define KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_H

#include "Dialect/Graph/IR/GraphDialect.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
namespace graph {

#define GEN_PASS_DECL
#include "Dialect/Graph/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Dialect/Graph/Transforms/Passes.h.inc"

} // namespace graph
} // namespace mlir

#endif // KGE_DIALECT_GRAPH_TRANSFORMS_PASSES_H
