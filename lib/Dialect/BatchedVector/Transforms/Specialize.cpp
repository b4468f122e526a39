//===- Specialize.cpp - give dynamic sizes static values ------------------===//

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/BatchedVector/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace bvec {
#define GEN_PASS_DEF_BATCHEDVECTORSPECIALIZE
#include "Dialect/BatchedVector/Transforms/Passes.h.inc"
} // namespace bvec
} // namespace mlir

using namespace mlir;
using namespace mlir::bvec;

/// `type` with its full shape (batch first) replaced by `shape`.
static Type withFullShape(Type type, ArrayRef<int64_t> shape) {
  return TypeSwitch<Type, Type>(type)
      .Case([&](TableType t) {
        return TableType::get(t.getContext(), shape, t.getElementType());
      })
      .Case([&](IndicesType t) {
        return IndicesType::get(t.getContext(), shape[0], t.getElementType());
      })
      .Case([&](ScalarType t) {
        return ScalarType::get(t.getContext(), shape[0], t.getElementType());
      })
      .Case([&](VecType t) {
        return VecType::get(t.getContext(), shape[0], shape[1],
                            t.getElementType());
      })
      .Case([&](MatType t) {
        return MatType::get(t.getContext(), shape[0], shape[1], shape[2],
                            t.getElementType());
      });
}

namespace {
struct BatchedVectorSpecializePass
    : bvec::impl::BatchedVectorSpecializeBase<BatchedVectorSpecializePass> {
  using BatchedVectorSpecializeBase::BatchedVectorSpecializeBase;

  void runOnOperation() override {
    llvm::StringMap<int64_t> values;
    for (const std::string &entry : sizes) {
      StringRef text(entry);
      auto [name, number] = text.split('=');
      int64_t value;
      if (name.empty() || number.getAsInteger(10, value) || value <= 0) {
        getOperation().emitError()
            << "bvec-specialize: expected SYMBOL=POSITIVE_INTEGER, got '"
            << entry << "'";
        return signalPassFailure();
      }
      values[name.trim()] = value;
    }
    llvm::StringSet<> used;
    for (auto func : getOperation().getOps<FuncOp>())
      if (failed(specialize(func, values, used)))
        return signalPassFailure();
    for (auto &entry : values)
      if (!used.contains(entry.getKey())) {
        getOperation().emitError()
            << "bvec-specialize: no function has a dynamic size named '"
            << entry.getKey() << "'";
        return signalPassFailure();
      }
  }

  LogicalResult specialize(FuncOp func, const llvm::StringMap<int64_t> &values,
                           llvm::StringSet<> &used) {
    FailureOr<DimensionSymbols> dims = DimensionSymbols::compute(func);
    if (failed(dims))
      return failure();
    auto retype = [&](Value value) {
      SmallVector<int64_t> shape = getFullShape(value.getType());
      bool changed = false;
      for (unsigned d = 0; d < shape.size(); ++d) {
        kge_runtime::Dim dim = dims->dimOf(value, d);
        if (dim.isStatic())
          continue;
        auto it = values.find(dim.symbol);
        if (it == values.end())
          continue;
        shape[d] = it->second;
        used.insert(dim.symbol);
        changed = true;
      }
      if (changed)
        value.setType(withFullShape(value.getType(), shape));
    };
    // Compute every new type before changing any: the symbols are keyed by
    // the values, not their types.
    SmallVector<Value> all(func.getArguments());
    func.getBody().walk([&](Operation *op) {
      llvm::append_range(all, op->getResults());
    });
    for (Value value : all)
      retype(value);
    SmallVector<Type> resultTypes(func.getReturn()->getOperandTypes());
    func.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(
        func.getContext(), func.getBody().getArgumentTypes(), resultTypes)));
    return success();
  }
};
} // namespace
