//===- KronDialect.h - kron dialect -----------------------------*- C++ -*-===//
//
// The `kron` dialect: marginalized graph kernels over datasets of labeled
// graphs. Include this header to use the dialect, its types, base-kernel
// attributes and operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_KRON_IR_KRONDIALECT_H
#define KGE_DIALECT_KRON_IR_KRONDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/Kron/IR/KronOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Kron/IR/KronAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Kron/IR/KronOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "Dialect/Kron/IR/KronOps.h.inc"

namespace mlir {
namespace kron {

/// Whether `attr` is a base kernel: a delta, square exponential or
/// constant, or a product or sum of those.
bool isBaseKernel(Attribute attr);

/// Checks that the base kernel `kernel` reads labels of `features`
/// features (`what`: "node" or "edge", for the messages): a product or a
/// sum names one kernel per feature, a lone delta or square exponential
/// reads the only one, a constant reads none.
LogicalResult verifyBaseKernel(Attribute kernel, unsigned features,
                               StringRef what,
                               function_ref<InFlightDiagnostic()> emitError);

/// The base kernels of each label feature of `kernel` (one per feature;
/// a lone delta or square exponential: itself for feature 0; a constant:
/// none) and whether they are summed (`#kron.sum`) rather than multiplied.
struct FeatureKernels {
  SmallVector<Attribute> perFeature;
  bool sum = false;
  /// A lone `#kron.constant`'s value (1 otherwise).
  double constant = 1.0;
};
FeatureKernels getFeatureKernels(Attribute kernel);

/// Whether `order` names a node order of the octiles: "natural", "rcm"
/// (reverse Cuthill-McKee), "pbr" (partition-based), "auto" or "refined".
bool isNodeOrder(StringRef order);

/// The node orders, as messages list them.
constexpr const char *kNodeOrders =
    "'natural', 'rcm', 'pbr', 'auto' or 'refined'";

} // namespace kron
} // namespace mlir

#endif // KGE_DIALECT_KRON_IR_KRONDIALECT_H
