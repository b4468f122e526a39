//===- Passes.h - KGE conversion passes -------------------------*- C++ -*-===//

#ifndef KGE_CONVERSION_PASSES_H
#define KGE_CONVERSION_PASSES_H

#include "Conversion/BatchedVectorToGPU/BatchedVectorToGPU.h"
#include "Conversion/BatchedVectorToSCF/BatchedVectorToSCF.h"
#include "Conversion/BatchedVectorToTile/BatchedVectorToTile.h"
#include "Conversion/GraphToTile/GraphToTile.h"
#include "Conversion/KronToGPU/KronToGPU.h"
#include "Conversion/TileIteratorToGPU/TileIteratorToGPU.h"
#include "Conversion/TileIteratorToSCF/TileIteratorToSCF.h"

namespace mlir {
namespace kge {

#define GEN_PASS_REGISTRATION
#include "Conversion/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_PASSES_H
