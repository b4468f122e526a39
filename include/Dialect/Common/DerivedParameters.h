//===- DerivedParameters.h - parameters a caller derives ------*- C++ -*-===//
//
// The schedules and layouts of every dialect's functions add parameters that
// the caller derives from others — graph data from a graph's arrays (graph's
// compact materialization, kron's octiles), composed weights from the
// weights (graph's linear-operator fusion) — marked `kge.derived =
// {function = ..., <its arguments' kge.param>...}`.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_COMMON_DERIVEDPARAMETERS_H
#define KGE_DIALECT_COMMON_DERIVEDPARAMETERS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace kge {

/// The parameters of one function by their kge.param names, and new
/// parameters derived from them.
class DerivedParameters {
public:
  explicit DerivedParameters(func::FuncOp f);

  /// The kge.param of `value` if it is a parameter of the function (an
  /// argument of its entry block), null otherwise.
  StringAttr nameOf(Value value);

  /// A new last parameter of type `type` named `base` (or `<prefix>_<base>`,
  /// then with a number, where taken), marked kge.derived = `derived`.
  /// Null when the function refuses it.
  Value add(Type type, StringRef base, StringRef prefix,
            ArrayRef<NamedAttribute> derived, Location loc);

private:
  func::FuncOp f;
  llvm::StringSet<> names;
};

} // namespace kge
} // namespace mlir

#endif // KGE_DIALECT_COMMON_DERIVEDPARAMETERS_H
