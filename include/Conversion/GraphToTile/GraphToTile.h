//===- GraphToTile.h - graph to tile ----------------------------*- C++ -*-===//

#ifndef KGE_CONVERSION_GRAPHTOTILE_GRAPHTOTILE_H
#define KGE_CONVERSION_GRAPHTOTILE_GRAPHTOTILE_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTGRAPHTOTILE
#include "Conversion/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_GRAPHTOTILE_GRAPHTOTILE_H
