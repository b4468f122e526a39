//===- KronToGPU.h - kron to gpu --------------------------------*- C++ -*-===//

#ifndef KGE_CONVERSION_KRONTOGPU_KRONTOGPU_H
#define KGE_CONVERSION_KRONTOGPU_KRONTOGPU_H

#include "mlir/Pass/Pass.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTKRONTOGPU
#include "Conversion/Passes.h.inc"

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_KRONTOGPU_KRONTOGPU_H
