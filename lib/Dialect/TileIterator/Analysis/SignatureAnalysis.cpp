//===- SignatureAnalysis.cpp - public interface of a tile function --------===//

#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"

#include "Dialect/Common/RuntimeTypes.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"

#include <map>

using namespace mlir;
using namespace mlir::tile;

bool mlir::tile::isTileFunction(func::FuncOp func) {
  return !func.isExternal() && !func.getBody().getOps<TaskOp>().empty();
}

namespace {
/// A dimension of an argument: (argument number, dimension).
using Slot = std::pair<unsigned, unsigned>;

/// The argument number of `value`, which must be an argument of the
/// function (tasks of tile functions take only arguments).
unsigned argNumber(Value value) {
  return cast<BlockArgument>(value).getArgNumber();
}
} // namespace

FailureOr<kge_runtime::Signature>
mlir::tile::computeSignature(func::FuncOp func) {
  if (func.isExternal())
    return func.emitOpError() << "is a declaration, not a tile function";
  if (func.getNumResults() != 0)
    return func.emitOpError()
           << "returns values; a tile function writes its outputs in place "
              "and returns nothing";
  SmallVector<TaskOp> tasks;
  for (Operation &op : func.getBody().front()) {
    if (auto task = dyn_cast<TaskOp>(op)) {
      for (Value operand : task->getOperands())
        if (!isa<BlockArgument>(operand) ||
            cast<BlockArgument>(operand).getOwner() != &func.getBody().front())
          return task.emitOpError()
                 << "takes an operand that is not an argument of its "
                    "function; a tile function's tasks read and write its "
                    "arguments";
      tasks.push_back(task);
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    return op.emitOpError() << "is not a tile.task; a tile function holds "
                               "only tasks";
  }
  if (tasks.empty())
    return func.emitOpError() << "holds no tile.task";

  unsigned numArgs = func.getNumArguments();
  kge_runtime::Signature signature;
  signature.name = func.getSymName().str();
  for (unsigned a = 0; a < numArgs; ++a) {
    auto type = dyn_cast<MemRefType>(func.getArgument(a).getType());
    if (!type || !type.getLayout().isIdentity())
      return func.emitOpError() << "argument #" << a << " has type "
                                << func.getArgument(a).getType()
                                << "; tile functions take memrefs with the "
                                   "identity layout";
    kge_runtime::Parameter param;
    auto name = func.getArgAttrOfType<StringAttr>(a, "kge.param");
    param.name = name ? name.str() : "arg" + std::to_string(a);
    std::optional<kge_runtime::DType> dtype = kge::getDType(type.getElementType());
    if (!dtype)
      return func.emitOpError() << "parameter '" << param.name
                                << "' has element type "
                                << type.getElementType()
                                << " that no runtime supports";
    param.dtype = *dtype;
    if (signature.find(param.name) >= 0)
      return func.emitOpError() << "two parameters are named '" << param.name
                                << "'";
    signature.params.push_back(std::move(param));
  }

  // Roles.
  // An output marked `kge.result` (the score of a bvec function translated
  // to a task) is a result: the runtime allocates it.
  for (TaskOp task : tasks) {
    for (Value output : task.getOutputs())
      signature.params[argNumber(output)].role =
          func.getArgAttr(argNumber(output), "kge.result")
              ? kge_runtime::ParamRole::Result
              : kge_runtime::ParamRole::Output;
  }
  for (unsigned a = 1; a < numArgs; ++a)
    if (signature.params[a - 1].role == kge_runtime::ParamRole::Result &&
        signature.params[a].role != kge_runtime::ParamRole::Result)
      return func.emitOpError()
             << "result '" << signature.params[a - 1].name
             << "' (kge.result) precedes argument '"
             << signature.params[a].name << "': results come last";
  for (TaskOp task : tasks) {
    for (auto [dim, key] : llvm::enumerate(task.getKeys())) {
      kge_runtime::Parameter &param = signature.params[argNumber(key)];
      if (param.role == kge_runtime::ParamRole::Output)
        return task.emitOpError() << "writes '" << param.name
                                  << "', which another task reads as keys";
      unsigned groups = argNumber(task.getOutputs()[0]);
      if (param.role == kge_runtime::ParamRole::Indices &&
          param.indexedDim != dim)
        return task.emitOpError()
               << "uses '" << param.name
               << "' as the keys of two different output dimensions";
      // Keys of several outputs (two results scattered through one index
      // array): every output's groups must hold its keys.
      if (param.role != kge_runtime::ParamRole::Indices)
        param.indexedTables.clear();
      if (!llvm::is_contained(param.indexedTables, groups))
        param.indexedTables.push_back(groups);
      param.role = kge_runtime::ParamRole::Indices;
      param.indexedDim = dim;
    }
  }

  // Gathers index a dimension of an input (a table: rows, or one matrix per
  // key).
  for (TaskOp task : tasks) {
    for (auto [n, gather] : llvm::enumerate(task.getGathers())) {
      kge_runtime::Parameter &param = signature.params[argNumber(gather)];
      auto pair = cast<ArrayAttr>(task.getGatheredAttr()[n]);
      unsigned input = cast<IntegerAttr>(pair[0]).getInt();
      unsigned dim = cast<IntegerAttr>(pair[1]).getInt();
      unsigned table = argNumber(task.getInputs()[input]);
      if (param.role == kge_runtime::ParamRole::Output)
        return task.emitOpError() << "writes '" << param.name
                                  << "', which another task gathers with";
      if (param.role == kge_runtime::ParamRole::Indices &&
          param.indexedDim != dim)
        return task.emitOpError()
               << "uses '" << param.name
               << "' to gather dimensions " << param.indexedDim << " and "
               << dim << " of its tables";
      if (param.role == kge_runtime::ParamRole::Indices &&
          !llvm::is_contained(param.indexedTables, table))
        param.indexedTables.push_back(table);
      if (param.role != kge_runtime::ParamRole::Indices)
        param.indexedTables = {table};
      param.role = kge_runtime::ParamRole::Indices;
      param.indexedDim = dim;
    }
  }

  // Dimensions tied by the tasks' axes.
  llvm::EquivalenceClasses<Slot> classes;
  for (unsigned a = 0; a < numArgs; ++a)
    for (unsigned d = 0, e = cast<MemRefType>(func.getArgument(a).getType())
                                 .getRank();
         d < e; ++d)
      classes.insert({a, d});
  // Axis classes of each task, to name them M, N, K.
  SmallVector<std::array<std::optional<Slot>, 3>> axisSlots;
  for (TaskOp task : tasks) {
    std::array<std::optional<Slot>, 3> axes;
    auto tie = [&](unsigned axis, Value operand, unsigned dim) {
      Slot slot{argNumber(operand), dim};
      if (axes[axis])
        classes.unionSets(*axes[axis], slot);
      else
        axes[axis] = slot;
    };
    for (auto [n, input] : llvm::enumerate(task.getInputs())) {
      AffineMap map =
          cast<AffineMapAttr>(task.getIndexingMaps()[n]).getValue();
      for (unsigned d = 0; d < map.getNumResults(); ++d) {
        // A gathered dimension is a table of its own size; the axis runs
        // over the gather.
        if (Value gather = task.getGather(n, d))
          tie(map.getDimPosition(d), gather, 0);
        else
          tie(map.getDimPosition(d), input, d);
      }
    }
    // (The keys of output per_key index k.)
    for (auto [axis, key] : llvm::enumerate(task.getKeys()))
      tie(task.getOutput() == OutputKind::per_key ? TaskOp::K : axis, key, 0);
    ValueRange outputs = task.getOutputs();
    switch (task.getOutput()) {
    case OutputKind::dense: {
      AffineMap map = task.getDenseOutputMap();
      for (unsigned d = 0; d < 2; ++d)
        tie(map.getDimPosition(d), outputs[0], d);
      break;
    }
    case OutputKind::select:
      classes.unionSets(Slot{argNumber(outputs[0]), 0},
                        Slot{argNumber(outputs[1]), 0});
      classes.unionSets(Slot{argNumber(outputs[0]), 0},
                        Slot{argNumber(outputs[2]), 0});
      break;
    case OutputKind::reduce:
      tie(TaskOp::I, outputs[0], 0);
      break;
    case OutputKind::aggregate:
      // Row keys alone: the groups' columns are j.
      if (task.getKeys().size() == 1)
        tie(TaskOp::J, outputs[0], 1);
      break;
    case OutputKind::per_key:
      tie(TaskOp::I, outputs[0], 1);
      tie(TaskOp::J, outputs[0], 2);
      break;
    case OutputKind::top_k:
    case OutputKind::distinct:
      break;
    }
    axisSlots.push_back(axes);
  }

  // Static sizes of each class must agree.
  std::map<Slot, int64_t> staticSize;
  for (unsigned a = 0; a < numArgs; ++a) {
    auto type = cast<MemRefType>(func.getArgument(a).getType());
    for (unsigned d = 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d))
        continue;
      Slot leader = classes.getLeaderValue({a, d});
      auto [it, inserted] = staticSize.emplace(leader, type.getDimSize(d));
      if (!inserted && it->second != type.getDimSize(d))
        return func.emitOpError()
               << "dimension " << d << " of '" << signature.params[a].name
               << "' is " << type.getDimSize(d) << " but a dimension tied to "
               << "it by a task is " << it->second;
    }
  }

  // Symbols: those a parameter names (kge.dims, kept from the bvec function
  // a task was translated from) first, then M, N, K for the tasks' axes.
  std::map<Slot, std::string> names;
  for (unsigned a = 0; a < numArgs; ++a)
    if (auto dims = func.getArgAttrOfType<ArrayAttr>(a, "kge.dims"))
      for (auto [d, dim] : llvm::enumerate(dims))
        // (Static sizes are numbers: no symbols.)
        if (auto name = dyn_cast<StringAttr>(dim);
            name && !name.getValue().empty() &&
            !llvm::isDigit(name.getValue().front()) &&
            static_cast<int64_t>(d) <
                cast<MemRefType>(func.getArgument(a).getType()).getRank())
          names.emplace(classes.getLeaderValue({a, static_cast<unsigned>(d)}),
                        name.str());
  static constexpr const char *kAxisSymbols[] = {"M", "N", "K"};
  for (auto [t, axes] : llvm::enumerate(axisSlots))
    for (unsigned axis = 0; axis < 3; ++axis) {
      if (!axes[axis])
        continue;
      Slot leader = classes.getLeaderValue(*axes[axis]);
      if (!names.count(leader))
        names[leader] = kAxisSymbols[axis] + (t ? std::to_string(t) : "");
    }
  for (unsigned a = 0; a < numArgs; ++a) {
    auto type = cast<MemRefType>(func.getArgument(a).getType());
    kge_runtime::Parameter &param = signature.params[a];
    for (unsigned d = 0; d < type.getRank(); ++d) {
      Slot leader = classes.getLeaderValue({a, d});
      auto size = staticSize.find(leader);
      if (size != staticSize.end()) {
        param.shape.push_back(kge_runtime::Dim::fixed(size->second));
        continue;
      }
      auto [it, inserted] =
          names.emplace(leader, param.name + "_d" + std::to_string(d));
      param.shape.push_back(kge_runtime::Dim::named(it->second));
    }
  }
  return signature;
}

SmallVector<ResultStart> mlir::tile::getResultStarts(func::FuncOp func) {
  SmallVector<ResultStart> starts;
  llvm::SmallDenseSet<unsigned> written;
  for (TaskOp task : func.getBody().getOps<TaskOp>())
    for (Value output : task.getOutputs()) {
      unsigned arg = argNumber(output);
      if (!written.insert(arg).second || !func.getArgAttr(arg, "kge.result"))
        continue;
      Type element = cast<MemRefType>(output.getType()).getElementType();
      std::optional<Combiner> combiner;
      switch (task.getOutput()) {
      case OutputKind::aggregate:
        combiner = task.getAggregateCombiner();
        break;
      case OutputKind::per_key:
        combiner = Combiner::add;
        break;
      case OutputKind::dense:
        if (task.getUpdate())
          combiner = task.getAccumulate();
        else if (!task.getWhen().empty())
          combiner = Combiner::add; // pairs a join skips stay zero
        break;
      default:
        break;
      }
      if (!combiner)
        continue;
      TypedAttr value = getCombinerIdentity(*combiner, element);
      if (!value) // a custom combination starts at zero
        value = getCombinerIdentity(Combiner::add, element);
      starts.push_back({arg, value});
    }
  return starts;
}
