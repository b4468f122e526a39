//===- BatchedVectorToTile.h - bvec score functions as tile tasks -*- C++ -*-===//

#ifndef KGE_CONVERSION_BATCHEDVECTORTOTILE_BATCHEDVECTORTOTILE_H
#define KGE_CONVERSION_BATCHEDVECTORTOTILE_BATCHEDVECTORTOTILE_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTBATCHEDVECTORTOTILE
#include "Conversion/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_BATCHEDVECTORTOTILE_BATCHEDVECTORTOTILE_H
