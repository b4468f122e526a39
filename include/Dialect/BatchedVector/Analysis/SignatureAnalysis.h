//===- SignatureAnalysis.h - public interface of a bvec.func ----*- C++ -*-===//
//
// Derives the kge_runtime::Signature of a `bvec.func`: named parameters with
// dtypes and symbolic shapes. Dynamic sizes are unified through the
// operations (a gather ties its result length to the table's row length, an
// elementwise operation ties its operands together, ...), so that every
// dynamic size of a result is determined by a table dimension or by the
// batch size `B`.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H
#define KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "kge/runtime/Signature.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <string>

namespace mlir {
namespace bvec {

/// The full shape of a table or batched type (the batch first).
SmallVector<int64_t> getFullShape(Type type);

/// The symbolic size of every dimension of every value of a function:
/// dimensions that must be equal share a symbol (`B`, `N_<table>`,
/// `D_<table>`, `D1_<table>`, `D2_<table>`).
class DimensionSymbols {
public:
  /// Computes the symbols of `func`; emits a diagnostic and fails when a
  /// dynamic size is determined by nothing.
  static FailureOr<DimensionSymbols> compute(FuncOp func);

  /// The size of dimension `pos` of `value`'s full shape: static, or named.
  kge_runtime::Dim dimOf(Value value, unsigned pos) const;

private:
  using Slot = std::pair<void *, unsigned>;
  static Slot key(Value value, unsigned pos);
  void unify(Value a, unsigned i, Value b, unsigned j);
  LogicalResult build(FuncOp func);

  llvm::EquivalenceClasses<Slot> classes;
  DenseMap<Slot, std::string> symbols;
};

/// Computes the signature of `func`. Emits a diagnostic at the offending
/// operation and fails when a dynamic size is determined by nothing.
FailureOr<kge_runtime::Signature> computeSignature(FuncOp func);

} // namespace bvec
} // namespace mlir

#endif // KGE_DIALECT_BATCHEDVECTOR_ANALYSIS_SIGNATUREANALYSIS_H
