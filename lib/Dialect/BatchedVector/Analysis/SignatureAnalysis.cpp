//===- SignatureAnalysis.cpp - public interface of a bvec.func ------------===//

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"

#include "Dialect/Common/RuntimeTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::bvec;

SmallVector<int64_t> mlir::bvec::getFullShape(Type type) {
  if (auto table = dyn_cast<TableType>(type))
    return SmallVector<int64_t>(table.getShape());
  auto batched = cast<BatchedType>(type);
  SmallVector<int64_t> shape{batched.getBatchSize()};
  llvm::append_range(shape, batched.getItemShape());
  return shape;
}

static Type elementTypeOf(Type type) {
  if (auto table = dyn_cast<TableType>(type))
    return table.getElementType();
  return cast<BatchedType>(type).getElementType();
}

//===----------------------------------------------------------------------===//
// DimensionSymbols
//===----------------------------------------------------------------------===//

DimensionSymbols::Slot DimensionSymbols::key(Value value, unsigned pos) {
  return {value.getAsOpaquePointer(), pos};
}

void DimensionSymbols::unify(Value a, unsigned i, Value b, unsigned j) {
  classes.unionSets(key(a, i), key(b, j));
}

FailureOr<DimensionSymbols> DimensionSymbols::compute(FuncOp func) {
  DimensionSymbols result;
  if (failed(result.build(func)))
    return failure();
  return result;
}

LogicalResult DimensionSymbols::build(FuncOp func) {
  // Every batched value shares the batch dimension; table rows are their own.
  Value batchRepresentative;
  auto addValue = [&](Value v) {
    for (unsigned i = 0, e = getFullShape(v.getType()).size(); i < e; ++i)
      classes.insert(key(v, i));
    if (!isa<BatchedType>(v.getType()))
      return;
    if (!batchRepresentative)
      batchRepresentative = v;
    unify(v, 0, batchRepresentative, 0);
  };
  for (BlockArgument arg : func.getArguments())
    addValue(arg);

  func.getBody().walk([&](Operation *op) {
    for (Value result : op->getResults())
      addValue(result);
    TypeSwitch<Operation *>(op)
        .Case([&](GatherVecOp g) { unify(g, 1, g.getTable(), 1); })
        .Case([&](GatherMatOp g) {
          unify(g, 1, g.getTable(), 1);
          unify(g, 2, g.getTable(), 2);
        })
        .Case([&](ScalMulVecOp s) { unify(s, 1, s.getVec(), 1); })
        .Case([&](VecMulVecOp m) { unify(m.getLhs(), 1, m.getRhs(), 1); })
        .Case([&](VecMulMatOp m) {
          unify(m.getVec(), 1, m.getMat(), 1);
          unify(m, 1, m.getMat(), 2);
        })
        .Case([&](MatMulVecOp m) {
          unify(m.getVec(), 1, m.getMat(), 2);
          unify(m, 1, m.getMat(), 1);
        })
        .Case([&](VecOuterVecOp m) {
          unify(m, 1, m.getLhs(), 1);
          unify(m, 2, m.getRhs(), 1);
        })
        .Default([&](Operation *other) {
          if (!other->hasTrait<OpTrait::SameOperandsAndResultType>())
            return;
          for (Value operand : other->getOperands())
            for (unsigned i = 0, e = getFullShape(operand.getType()).size();
                 i < e; ++i)
              unify(operand, i, other->getResult(0), i);
        });
  });

  // Name the classes: `B` for the batch, then table dimensions in argument
  // order: `N_<table>` for row counts, `D_<table>` for the length of a table
  // of vectors, `D1_<table>`/`D2_<table>` for the shape of a table of
  // matrices.
  if (batchRepresentative)
    symbols[classes.getLeaderValue(key(batchRepresentative, 0))] = "B";
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    auto table = dyn_cast<TableType>(arg.getType());
    if (!table)
      continue;
    StringRef name = func.getArgName(i);
    for (unsigned d = 0, e = table.getRank(); d < e; ++d) {
      Slot leader = classes.getLeaderValue(key(arg, d));
      if (symbols.count(leader))
        continue;
      if (d == 0)
        symbols[leader] = ("N_" + name).str();
      else if (table.holdsVectors())
        symbols[leader] = ("D_" + name).str();
      else
        symbols[leader] = ("D" + Twine(d) + "_" + name).str();
    }
  }

  // A dynamic size that no table or batch determines cannot be computed.
  // Every operation of the dialect derives its dynamic sizes from its
  // operands, so this guards operations added later.
  WalkResult walk = func.getBody().walk([&](Operation *op) {
    for (Value value : op->getResults()) {
      SmallVector<int64_t> shape = getFullShape(value.getType());
      for (unsigned d = 0; d < shape.size(); ++d) {
        if (!ShapedType::isDynamic(shape[d]) ||
            symbols.count(classes.getLeaderValue(key(value, d))))
          continue;
        op->emitOpError() << "has a dynamic size in dimension " << d
                          << " that no table dimension determines";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

kge_runtime::Dim DimensionSymbols::dimOf(Value value, unsigned pos) const {
  int64_t size = getFullShape(value.getType())[pos];
  if (!ShapedType::isDynamic(size))
    return kge_runtime::Dim::fixed(size);
  auto it = symbols.find(classes.getLeaderValue(key(value, pos)));
  assert(it != symbols.end() && "undetermined dimension survived build()");
  return kge_runtime::Dim::named(it->second);
}

//===----------------------------------------------------------------------===//
// computeSignature
//===----------------------------------------------------------------------===//

FailureOr<kge_runtime::Signature> mlir::bvec::computeSignature(FuncOp func) {
  FailureOr<DimensionSymbols> dims = DimensionSymbols::compute(func);
  if (failed(dims))
    return failure();

  kge_runtime::Signature signature;
  signature.name = func.getSymName().str();
  auto makeParam = [&](StringRef name, kge_runtime::ParamRole role,
                       Value value) -> FailureOr<kge_runtime::Parameter> {
    Type type = value.getType();
    kge_runtime::Parameter param;
    param.name = name.str();
    param.role = role;
    std::optional<kge_runtime::DType> dtype =
        kge::getDType(elementTypeOf(type));
    if (!dtype)
      return func.emitOpError()
             << "parameter '" << name << "' has element type "
             << elementTypeOf(type) << " that no runtime supports";
    param.dtype = *dtype;
    for (unsigned d = 0, e = getFullShape(type).size(); d < e; ++d)
      param.shape.push_back(dims->dimOf(value, d));
    return param;
  };

  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    // Tables and per-edge inputs are arrays read whole (role "table": a
    // per-edge input is a [B] array); index arrays are checked against
    // the tables they index.
    auto role = isa<IndicesType>(arg.getType())
                    ? kge_runtime::ParamRole::Indices
                    : kge_runtime::ParamRole::Table;
    FailureOr<kge_runtime::Parameter> param =
        makeParam(func.getArgName(i), role, arg);
    if (failed(param))
      return failure();
    if (role == kge_runtime::ParamRole::Indices) {
      for (Operation *user : arg.getUsers()) {
        Value table;
        if (auto gather = dyn_cast<GatherVecOp>(user))
          table = gather.getTable();
        else if (auto gather = dyn_cast<GatherMatOp>(user))
          table = gather.getTable();
        if (!table)
          continue;
        unsigned tableIndex = cast<BlockArgument>(table).getArgNumber();
        if (!llvm::is_contained(param->indexedTables, tableIndex))
          param->indexedTables.push_back(tableIndex);
      }
      llvm::sort(param->indexedTables);
    }
    signature.params.push_back(std::move(*param));
  }
  Operation *ret = func.getReturn();
  for (auto [i, value] : llvm::enumerate(ret->getOperands())) {
    FailureOr<kge_runtime::Parameter> param = makeParam(
        func.getResultName(i), kge_runtime::ParamRole::Result, value);
    if (failed(param))
      return failure();
    signature.params.push_back(std::move(*param));
  }
  return signature;
}
