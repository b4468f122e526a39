//===- TileIteratorToGPU.h - tile tasks to tiled GPU kernels ----*- C++ -*-===//

#ifndef KGE_CONVERSION_TILEITERATORTOGPU_TILEITERATORTOGPU_H
#define KGE_CONVERSION_TILEITERATORTOGPU_TILEITERATORTOGPU_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTTILEITERATORTOGPU
#define GEN_PASS_DECL_TILESCHEDULE
#include "Conversion/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_TILEITERATORTOGPU_TILEITERATORTOGPU_H
