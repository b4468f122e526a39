//===- SignatureAnalysis.h - public interface of a tile function -*- C++ -*-===//
//
// Derives the kge_runtime::Signature of a *tile function*: a `func.func`
// over memrefs whose body is a sequence of `tile.task`s. Each argument is a
// parameter named by its `kge.param` attribute (`arg<N>` without one): an
// output of a task (role `output`, written in place), a key array of an
// aggregate (role `indices`, range-checked against the groups of its
// output), or an input (role `table`). Dimensions tied by a task's axes
// share a symbol: `M`, `N`, `K` for the first task's i, j, k (`M1`, ... for
// later tasks), `<param>_d<dim>` for the rest (groups, capacities).
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_ANALYSIS_SIGNATUREANALYSIS_H
#define KGE_DIALECT_TILEITERATOR_ANALYSIS_SIGNATUREANALYSIS_H

#include "kge/runtime/Signature.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir {
namespace tile {

/// Whether `func` is a tile function (its body holds a `tile.task`).
bool isTileFunction(func::FuncOp func);

/// Computes the signature of the tile function `func`. Emits a diagnostic
/// and fails when `func` is not one (an argument that is not a memref, an
/// operation other than `tile.task` in its body, a result, contradictory
/// static sizes).
FailureOr<kge_runtime::Signature> computeSignature(func::FuncOp func);

/// A result of a tile function that a task combines into (an aggregate, a
/// matrix per key, a dense update) or leaves partly unwritten (a joined
/// dense output) before any task stores it whole: it starts at `value`,
/// the identity of that first task's combination (zero for add and for
/// joins, -inf for max, +inf for min). The GPU launch plan clears it, the
/// CPU lowering fills it.
struct ResultStart {
  unsigned arg;
  TypedAttr value;
};

/// The results of `func` (arguments marked `kge.result`) that start at a
/// value, in the order of the tasks that first write them.
SmallVector<ResultStart> getResultStarts(func::FuncOp func);

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_ANALYSIS_SIGNATUREANALYSIS_H
