//===- CompilerModule.cpp - the kge._compiler Python extension ------------===//
//
// KGE's compiler from Python, shaped like Triton's `libtriton.ir`:
//
//   Context       KGE's dialects and passes, loaded
//   Module        parse, print, verify, clone, functions
//   Location      unknown, file:line:col, named
//   Type          the bvec types (table, indices, scalar, vec, mat)
//   Attribute     parse and print
//   Value         an SSA value: its type and, for parameters, its name
//   Function      a bvec.func under construction or parsed
//   Builder       one method per bvec operation, result types inferred
//   PassManager   named pipelines (kge-lower-to-gpu, ...) and textual ones
//   targets       PTX, kernel bundles, signatures, CPU execution (NumPy)
//
// Every diagnostic MLIR emits during a call is collected and raised as
// kge._compiler.MLIRError, whose `diagnostics` list holds one
// "location: severity: message" string per diagnostic.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/Graph/IR/GraphDialect.h"
#include "Dialect/TileIterator/Analysis/SignatureAnalysis.h"
#include "Dialect/TileIterator/Query/QueryParser.h"
#include "ExecutionEngine/CpuRunner.h"
#include "InitAll.h"
#include "Target/Bundle.h"
#include "Target/PTX.h"
#include "Target/SignatureJSON.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace py = pybind11;
using namespace mlir;
namespace bvec = mlir::bvec;

namespace {

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

/// What MLIRError carries to Python.
struct MLIRError : std::exception {
  explicit MLIRError(std::vector<std::string> diagnostics)
      : diagnostics(std::move(diagnostics)) {
    for (const std::string &d : this->diagnostics)
      message += (message.empty() ? "" : "\n") + d;
    if (message.empty())
      message = "MLIR reported a failure without a diagnostic";
  }
  const char *what() const noexcept override { return message.c_str(); }
  std::vector<std::string> diagnostics;
  std::string message;
};

std::string formatLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + Twine(file.getLine()) + ":" +
            Twine(file.getColumn()))
        .str();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (!isa<UnknownLoc>(name.getChildLoc()))
      return formatLocation(name.getChildLoc());
    return name.getName().str();
  }
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return formatLocation(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return formatLocation(fused.getLocations().front());
  return "<unknown>";
}

std::string formatDiagnostic(Diagnostic &diag) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << formatLocation(diag.getLocation()) << ": ";
  switch (diag.getSeverity()) {
  case DiagnosticSeverity::Error:
    os << "error: ";
    break;
  case DiagnosticSeverity::Warning:
    os << "warning: ";
    break;
  case DiagnosticSeverity::Note:
    os << "note: ";
    break;
  case DiagnosticSeverity::Remark:
    os << "remark: ";
    break;
  }
  os << diag;
  for (Diagnostic &note : diag.getNotes())
    os << "\n  " << formatLocation(note.getLocation()) << ": note: " << note;
  return text;
}

/// Collects the diagnostics of `context` while alive; `fail` throws them.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *context)
      : handler(context, [this](Diagnostic &diag) {
          messages.push_back(formatDiagnostic(diag));
          return success();
        }) {}

  [[noreturn]] void fail() { throw MLIRError(std::move(messages)); }
  void check(LogicalResult result) {
    if (failed(result))
      fail();
  }

  std::vector<std::string> messages;

private:
  ScopedDiagnosticHandler handler;
};

//===----------------------------------------------------------------------===//
// Handles
//===----------------------------------------------------------------------===//

struct ContextHandle {
  ContextHandle() {
    static std::once_flag passes;
    std::call_once(passes, [] { kge::registerAllPasses(); });
    DialectRegistry registry;
    kge::registerAllDialects(registry);
    context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }
  MLIRContext *get() const { return context.get(); }
  std::unique_ptr<MLIRContext> context;
};
using ContextRef = std::shared_ptr<ContextHandle>;

struct LocationHandle {
  ContextRef context;
  Location loc;
};

struct TypeHandle {
  ContextRef context;
  Type type;
};

struct AttributeHandle {
  ContextRef context;
  Attribute attr;
};

struct ModuleHandle {
  ContextRef context;
  OwningOpRef<ModuleOp> module;
  ModuleOp op() const { return module.get(); }
};
using ModuleRef = std::shared_ptr<ModuleHandle>;

/// A value keeps its module (and so its context) alive.
struct ValueHandle {
  ModuleRef owner;
  Value value;
};

struct FunctionHandle {
  ModuleRef owner;
  bvec::FuncOp func;
};

template <typename T> std::string printed(T entity) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << entity;
  return text;
}

std::string printedOp(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

std::optional<int64_t> dimOf(int64_t size) {
  if (ShapedType::isDynamic(size))
    return std::nullopt;
  return size;
}

int64_t sizeOf(std::optional<int64_t> size) {
  return size ? *size : ShapedType::kDynamic;
}

Type elementType(MLIRContext *context, const std::string &dtype) {
  Builder b(context);
  if (dtype == "f16")
    return b.getF16Type();
  if (dtype == "bf16")
    return b.getBF16Type();
  if (dtype == "f32")
    return b.getF32Type();
  if (dtype == "f64")
    return b.getF64Type();
  if (dtype == "i32")
    return b.getI32Type();
  if (dtype == "i64")
    return b.getI64Type();
  throw py::value_error("unknown element type '" + dtype +
                        "': expected f16, bf16, f32, f64, i32 or i64");
}

std::string typeKind(Type type) {
  if (isa<bvec::TableType>(type))
    return "table";
  if (isa<bvec::IndicesType>(type))
    return "indices";
  if (isa<bvec::ScalarType>(type))
    return "scalar";
  if (isa<bvec::VecType>(type))
    return "vec";
  if (isa<bvec::MatType>(type))
    return "mat";
  return "other";
}

std::vector<std::optional<int64_t>> typeShape(Type type) {
  std::vector<std::optional<int64_t>> shape;
  if (auto table = dyn_cast<bvec::TableType>(type)) {
    for (int64_t d : table.getShape())
      shape.push_back(dimOf(d));
  } else if (auto batched = dyn_cast<bvec::BatchedType>(type)) {
    shape.push_back(dimOf(batched.getBatchSize()));
    for (int64_t d : batched.getItemShape())
      shape.push_back(dimOf(d));
  }
  return shape;
}

Type elementTypeOf(Type type) {
  if (auto table = dyn_cast<bvec::TableType>(type))
    return table.getElementType();
  if (auto indices = dyn_cast<bvec::IndicesType>(type))
    return indices.getElementType();
  if (auto scalar = dyn_cast<bvec::ScalarType>(type))
    return scalar.getElementType();
  if (auto vec = dyn_cast<bvec::VecType>(type))
    return vec.getElementType();
  if (auto mat = dyn_cast<bvec::MatType>(type))
    return mat.getElementType();
  return {};
}

/// Builds a bvec type, reporting verifier failures as MLIRError.
template <typename T, typename... Args>
TypeHandle makeType(const ContextRef &context, Args... args) {
  MLIRContext *ctx = context->get();
  DiagnosticCollector diagnostics(ctx);
  Location loc = UnknownLoc::get(ctx);
  T type = T::getChecked([&] { return emitError(loc); }, ctx, args...);
  if (!type)
    diagnostics.fail();
  return TypeHandle{context, type};
}

ModuleRef parseModule(const ContextRef &context, const std::string &text,
                      const std::string &filename) {
  DiagnosticCollector diagnostics(context->get());
  ParserConfig config(context->get());
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, config, filename);
  if (!module)
    diagnostics.fail();
  return std::make_shared<ModuleHandle>(ModuleHandle{context, std::move(module)});
}

ModuleRef parseGamutQuery(const ContextRef &context, const std::string &text,
                          const std::string &name,
                          const std::map<std::string, std::string> &dtypes,
                          const std::string &filename) {
  DiagnosticCollector diagnostics(context->get());
  tile::QueryOptions options;
  options.name = name;
  options.bufferName = filename;
  for (const auto &[array, dtype] : dtypes)
    options.dtypes[array] = dtype;
  OwningOpRef<ModuleOp> module =
      tile::parseQuery(text, context->get(), options);
  if (!module)
    diagnostics.fail();
  return std::make_shared<ModuleHandle>(ModuleHandle{context, std::move(module)});
}

std::vector<FunctionHandle> functionsOf(const ModuleRef &module) {
  std::vector<FunctionHandle> result;
  for (auto func : module->module->getOps<bvec::FuncOp>())
    result.push_back({module, func});
  return result;
}

bvec::FuncOp findFunction(const ModuleRef &module, const std::string &name) {
  bvec::FuncOp found;
  int count = 0;
  for (auto func : module->module->getOps<bvec::FuncOp>()) {
    ++count;
    if (name.empty() || func.getSymName() == name)
      found = found ? found : func;
  }
  if (!found)
    throw py::key_error(name.empty() ? "the module has no bvec.func"
                                     : "the module has no bvec.func @" + name);
  if (name.empty() && count > 1)
    throw py::value_error("the module has " + std::to_string(count) +
                          " bvec.func ops; name the one to use");
  return found;
}

/// The tile function (a func.func of tile.tasks) called `name`, or the only
/// one when `name` is empty and the module has no bvec.func; null if none.
func::FuncOp findTileFunction(const ModuleRef &module,
                              const std::string &name) {
  if (name.empty() && !module->module->getOps<bvec::FuncOp>().empty())
    return nullptr;
  SmallVector<func::FuncOp> found;
  for (auto func : module->module->getOps<func::FuncOp>())
    if ((name.empty() || func.getSymName() == name) &&
        tile::isTileFunction(func))
      found.push_back(func);
  if (name.empty() && found.size() > 1)
    throw py::value_error("the module has " + std::to_string(found.size()) +
                          " tile functions; name the one to use");
  return found.empty() ? nullptr : found.front();
}

//===----------------------------------------------------------------------===//
// Builder
//===----------------------------------------------------------------------===//

/// What the builders share: their context, their function and insertion
/// point, the check that operands belong to that function's module, and
/// operations created under their verifiers.
template <typename FuncT> class BuilderBase {
public:
  explicit BuilderBase(ContextRef context)
      : context(std::move(context)), builder(this->context->get()),
        loc(UnknownLoc::get(this->context->get())) {}

  ContextRef context;
  OpBuilder builder;
  Location loc;
  ModuleRef module;
  FuncT func;

  ModuleRef createModule() {
    auto module = ModuleOp::create(loc);
    return std::make_shared<ModuleHandle>(
        ModuleHandle{context, OwningOpRef<ModuleOp>(module)});
  }

  void requireFunction() {
    if (!func)
      throw py::value_error("the builder has no function to insert into; "
                            "call create_function first");
  }

  Value operand(const ValueHandle &value, const char *role) {
    requireFunction();
    if (value.owner != module)
      throw py::value_error(std::string(role) +
                            " belongs to another module than the builder's "
                            "function");
    return value.value;
  }

  /// Creates `Op` with `resultType`, checks it with its verifier and
  /// returns its result; on failure erases it and raises MLIRError.
  template <typename Op, typename... Args>
  ValueHandle create(Type resultType, Args &&...args) {
    requireFunction();
    DiagnosticCollector diagnostics(context->get());
    auto op = Op::create(builder, loc, resultType, std::forward<Args>(args)...);
    if (failed(verify(op, /*verifyRecursively=*/false))) {
      op->erase();
      eraseUnused(helpers);
      diagnostics.fail();
    }
    helpers.clear();
    return {module, op->getResult(0)};
  }

  /// Operations built for the next operation (a size it reads): erased
  /// with it when it fails to verify.
  SmallVector<Operation *> helpers;
  static void eraseUnused(SmallVectorImpl<Operation *> &ops) {
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
    ops.clear();
  }
};

class IRBuilder : public BuilderBase<bvec::FuncOp> {
public:
  using BuilderBase::BuilderBase;

  FunctionHandle createFunction(const ModuleRef &target, const std::string &name,
                            const std::vector<std::pair<std::string, TypeHandle>>
                                &params,
                            const std::vector<std::string> &resultNames) {
    SmallVector<Type> types;
    SmallVector<StringRef> names;
    for (const auto &[paramName, type] : params) {
      if (!isa<bvec::TableType, bvec::IndicesType, bvec::ScalarType>(
              type.type))
        throw py::type_error("parameter '" + paramName +
                             "' must be a table, an index array or a "
                             "per-edge scalar, got " +
                             printed(type.type));
      types.push_back(type.type);
      names.push_back(paramName);
    }
    SmallVector<StringRef> results(resultNames.begin(), resultNames.end());
    builder.setInsertionPointToEnd(target->module->getBody());
    auto function = bvec::FuncOp::create(
        builder, loc, name, builder.getFunctionType(types, {}), names, results);
    setInsertionPointToEnd(FunctionHandle{target, function});
    return {target, function};
  }

  void setInsertionPointToEnd(const FunctionHandle &function) {
    module = function.owner;
    func = function.func;
    builder.setInsertionPointToEnd(&func.getBody().front());
  }

  [[noreturn]] void fail(const Twine &message) {
    DiagnosticCollector diagnostics(context->get());
    emitError(loc) << message;
    diagnostics.fail();
  }


  template <typename T> T expect(Value v, const char *what, StringRef op) {
    auto typed = dyn_cast<T>(v.getType());
    if (!typed)
      fail(Twine("bvec.") + op + " expects " + what + ", got " +
           printed(v.getType()));
    return typed;
  }

  ValueHandle gather(const ValueHandle &tableValue, const ValueHandle &indicesValue,
                 bool matrices) {
    Value table = operand(tableValue, "the table");
    Value indices = operand(indicesValue, "the index array");
    StringRef name = matrices ? "gather_mat" : "gather_vec";
    auto tableType = expect<bvec::TableType>(table, "a table", name);
    expect<bvec::IndicesType>(indices, "an index array", name);
    if (tableType.holdsVectors() == matrices)
      fail(Twine("bvec.") + name + " needs a table of " +
           (matrices ? "matrices (rank 3)" : "vectors (rank 2)") + ", got " +
           printed(tableType) + "; use bvec." +
           (matrices ? "gather_vec" : "gather_mat"));
    // Rows of a half-precision table are widened to f32: KGE computes in
    // f32 (bvec.gather_vec).
    Type element = tableType.getElementType();
    if (isa<Float16Type, BFloat16Type>(element))
      element = builder.getF32Type();
    Type result =
        bvec::batchedType(indices.getType(), tableType.getShape().drop_front(), element);
    if (matrices)
      return create<bvec::GatherMatOp>(result, table, indices);
    return create<bvec::GatherVecOp>(result, table, indices);
  }

  template <typename Op> ValueHandle binary(const ValueHandle &l, const ValueHandle &r) {
    Value lhs = operand(l, "the left operand"), rhs = operand(r, "the right operand");
    if (lhs.getType() != rhs.getType())
      fail(Twine("bvec.") + Op::getOperationName().drop_front(5) +
           " needs operands of one type, got " + printed(lhs.getType()) +
           " and " + printed(rhs.getType()));
    return create<Op>(lhs.getType(), lhs, rhs);
  }

  template <typename Op> ValueHandle unary(const ValueHandle &x) {
    Value input = operand(x, "the operand");
    return create<Op>(input.getType(), input);
  }

  ValueHandle scalMulVec(const ValueHandle &s, const ValueHandle &v) {
    Value scalar = operand(s, "the scalar"), vec = operand(v, "the vector");
    expect<bvec::ScalarType>(scalar, "a batch of scalars", "scal_mul_vec");
    expect<bvec::VecType>(vec, "a batch of vectors", "scal_mul_vec");
    return create<bvec::ScalMulVecOp>(vec.getType(), scalar, vec);
  }

  ValueHandle vecMulVec(const ValueHandle &a, const ValueHandle &b) {
    Value lhs = operand(a, "the left operand"), rhs = operand(b, "the right operand");
    auto type = expect<bvec::VecType>(lhs, "batches of vectors", "vec_mul_vec");
    expect<bvec::VecType>(rhs, "batches of vectors", "vec_mul_vec");
    return create<bvec::VecMulVecOp>(
        bvec::batchedType(type, {}, type.getElementType()), lhs, rhs);
  }

  ValueHandle vecMulMat(const ValueHandle &v, const ValueHandle &m) {
    Value vec = operand(v, "the vector"), mat = operand(m, "the matrix");
    auto vecType = expect<bvec::VecType>(vec, "a batch of vectors", "vec_mul_mat");
    auto matType = expect<bvec::MatType>(mat, "a batch of matrices", "vec_mul_mat");
    return create<bvec::VecMulMatOp>(
        bvec::batchedType(vecType, {matType.getCols()}, vecType.getElementType()), vec,
        mat);
  }

  ValueHandle vecOuterVec(const ValueHandle &a, const ValueHandle &b) {
    Value lhs = operand(a, "the left operand"), rhs = operand(b, "the right operand");
    auto l = expect<bvec::VecType>(lhs, "batches of vectors", "vec_outer_vec");
    auto r = expect<bvec::VecType>(rhs, "batches of vectors", "vec_outer_vec");
    return create<bvec::VecOuterVecOp>(
        bvec::batchedType(l, {l.getLength(), r.getLength()}, l.getElementType()), lhs,
        rhs);
  }

  ValueHandle norm(const ValueHandle &x, int64_t p) {
    Value input = operand(x, "the operand");
    auto type = expect<bvec::VecType>(input, "a batch of vectors", "norm");
    return create<bvec::NormOp>(bvec::batchedType(type, {}, type.getElementType()), input,
                                builder.getI64IntegerAttr(p));
  }

  ValueHandle reduce(const ValueHandle &x, const std::string &kind) {
    Value input = operand(x, "the operand");
    auto type = expect<bvec::VecType>(input, "a batch of vectors", "reduce");
    std::optional<bvec::ReductionKind> parsed =
        bvec::symbolizeReductionKind(kind);
    if (!parsed)
      fail("bvec.reduce: unknown reduction '" + kind +
           "' (expected sum, mean, max or min)");
    return create<bvec::ReduceOp>(bvec::batchedType(type, {}, type.getElementType()),
                                  *parsed, input);
  }

  ValueHandle slice(const ValueHandle &x, int64_t offset, int64_t length) {
    Value input = operand(x, "the operand");
    auto type = expect<bvec::VecType>(input, "a batch of vectors", "slice");
    return create<bvec::SliceOp>(
        bvec::batchedType(type, {length}, type.getElementType()), input,
        builder.getI64IntegerAttr(offset));
  }

  ValueHandle constant(const TypeHandle &type, double value) {
    requireFunction();
    if (!isa<bvec::ScalarType, bvec::VecType, bvec::MatType>(type.type))
      fail("bvec.constant needs a batch of scalars, vectors or matrices, "
           "got " + printed(type.type));
    return create<bvec::ConstantOp>(type.type, value);
  }

  /// Ends the function: its results are `values`; verifies the function.
  void ret(const std::vector<ValueHandle> &values) {
    requireFunction();
    SmallVector<Value> operands;
    SmallVector<Type> types;
    for (const ValueHandle &value : values) {
      operands.push_back(operand(value, "a result"));
      types.push_back(value.value.getType());
    }
    DiagnosticCollector diagnostics(context->get());
    if (func.getResultNames().size() != values.size())
      fail("@" + func.getSymName() + " names " +
           Twine(func.getResultNames().size()) + " results but returns " +
           Twine(values.size()));
    bvec::ReturnOp::create(builder, loc, operands);
    func.setFunctionType(
        builder.getFunctionType(func.getArgumentTypes(), types));
    if (failed(verify(func)))
      diagnostics.fail();
  }
};

//===----------------------------------------------------------------------===//
// Pass manager
//===----------------------------------------------------------------------===//

struct PassManagerHandle {
  explicit PassManagerHandle(ContextRef context)
      : context(std::move(context)),
        pm(std::make_unique<PassManager>(this->context->get())) {}

  void add(std::string pipeline) {
    StringRef text = StringRef(pipeline).trim();
    // "builtin.module(a,b)" and "a,b" both mean passes on the module.
    if (text.consume_front("builtin.module(") && text.consume_back(")")) {
    }
    std::string errors;
    llvm::raw_string_ostream os(errors);
    DiagnosticCollector diagnostics(context->get());
    if (failed(parsePassPipeline(text, *pm, os))) {
      diagnostics.messages.push_back("invalid pass pipeline '" + pipeline +
                                     "': " + StringRef(errors).trim().str());
      diagnostics.fail();
    }
  }

  void run(const ModuleRef &module) {
    if (module->context != context)
      throw py::value_error("the module belongs to another Context");
    DiagnosticCollector diagnostics(context->get());
    diagnostics.check(pm->run(*module->module));
  }

  std::string str() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    pm->printAsTextualPipeline(os);
    return text;
  }

  ContextRef context;
  std::unique_ptr<PassManager> pm;
};

//===----------------------------------------------------------------------===//
// CPU execution
//===----------------------------------------------------------------------===//

kge_runtime::DType dtypeOfArray(const py::array &array, const std::string &name) {
  py::dtype dtype = array.dtype();
  if (dtype.is(py::dtype::of<float>()))
    return kge_runtime::DType::F32;
  if (dtype.is(py::dtype::of<double>()))
    return kge_runtime::DType::F64;
  if (dtype.is(py::dtype::of<int32_t>()))
    return kge_runtime::DType::I32;
  if (dtype.is(py::dtype::of<int64_t>()))
    return kge_runtime::DType::I64;
  if (dtype.kind() == 'f' && dtype.itemsize() == 2)
    return kge_runtime::DType::F16;
  // NumPy has no bfloat16; the ml_dtypes package (ml_dtypes.bfloat16)
  // registers it.
  if (dtype.itemsize() == 2 &&
      py::str(dtype.attr("name")).cast<std::string>() == "bfloat16")
    return kge_runtime::DType::BF16;
  throw py::type_error("argument '" + name + "' has dtype " +
                       py::str(dtype).cast<std::string>() +
                       ", which KGE does not support");
}

py::dtype numpyDType(kge_runtime::DType dtype) {
  switch (dtype) {
  case kge_runtime::DType::F16:
    return py::dtype("float16");
  case kge_runtime::DType::BF16:
    try {
      return py::dtype::from_args(
          py::module_::import("ml_dtypes").attr("bfloat16"));
    } catch (py::error_already_set &) {
      throw py::type_error("bfloat16 results need the ml_dtypes package "
                           "(NumPy has no bfloat16)");
    }
  case kge_runtime::DType::F32:
    return py::dtype::of<float>();
  case kge_runtime::DType::F64:
    return py::dtype::of<double>();
  case kge_runtime::DType::I32:
    return py::dtype::of<int32_t>();
  case kge_runtime::DType::I64:
    return py::dtype::of<int64_t>();
  }
  return py::dtype::of<float>();
}

struct CpuFunctionHandle {
  std::unique_ptr<kge::CpuFunction> function;

  py::dict call(const py::dict &inputs, std::optional<int64_t> batchSize) {
    const kge_runtime::Signature &signature = function->signature();
    std::vector<py::array> keep;
    std::vector<kge::HostArray> arguments;
    for (const auto &item : inputs) {
      std::string name = py::str(item.first);
      int index = signature.find(name);
      if (index < 0 || signature.params[index].role ==
                           kge_runtime::ParamRole::Result)
        throw py::type_error("'" + signature.name +
                             "' has no argument named '" + name + "'");
    }
    for (unsigned i = 0; i < signature.numArguments(); ++i) {
      const kge_runtime::Parameter &param = signature.params[i];
      if (!inputs.contains(param.name))
        throw py::type_error("'" + signature.name + "' is missing argument '" +
                             param.name + "'");
      py::object object = inputs[py::str(param.name)];
      if (!py::isinstance<py::array>(object))
        throw py::type_error("argument '" + param.name +
                             "' must be a NumPy array, got " +
                             py::str(object.get_type()).cast<std::string>());
      if (param.role == kge_runtime::ParamRole::Output) {
        // Outputs are written in place: no copy may stand in for them.
        auto output = py::reinterpret_borrow<py::array>(object);
        if (!(output.flags() & py::array::c_style) || !output.writeable())
          throw py::type_error("output '" + param.name +
                               "' must be a writable C-contiguous array");
      }
      auto array = py::array::ensure(object, py::array::c_style);
      if (!array)
        throw py::type_error("argument '" + param.name +
                             "' cannot be made contiguous");
      kge::HostArray host;
      host.dtype = dtypeOfArray(array, param.name);
      host.data = array.mutable_data();
      for (py::ssize_t d = 0; d < array.ndim(); ++d)
        host.shape.push_back(array.shape(d));
      keep.push_back(array);
      arguments.push_back(std::move(host));
    }
    std::vector<std::vector<int64_t>> shapes;
    std::string error;
    if (!function->resultShapes(arguments, batchSize, shapes, error))
      throw py::value_error(error);
    py::dict outputs;
    std::vector<kge::HostArray> results;
    for (unsigned r = 0; r < signature.numResults(); ++r) {
      const kge_runtime::Parameter &param =
          signature.params[signature.numArguments() + r];
      py::array array(numpyDType(param.dtype), shapes[r]);
      // Results start at zero (tasks may combine into them).
      std::memset(array.mutable_data(), 0, array.nbytes());
      kge::HostArray host;
      host.dtype = param.dtype;
      host.data = array.mutable_data();
      host.shape = shapes[r];
      results.push_back(std::move(host));
      outputs[py::str(param.name)] = array;
    }
    {
      py::gil_scoped_release release;
      if (!function->run(arguments, results, batchSize, error)) {
        // Arguments were checked by resultShapes: what is left is an index
        // outside its table (or a failure of the JIT-compiled code).
        if (error.find("out of range") != std::string::npos)
          throw py::index_error(error);
        throw std::runtime_error(error);
      }
    }
    return outputs;
  }
};

py::object jsonToPython(const std::string &text) {
  return py::module_::import("json").attr("loads")(text);
}

//===----------------------------------------------------------------------===//
// The graph builder: graph functions (func.func over tensors) op by op
//===----------------------------------------------------------------------===//

struct GraphFunctionHandle {
  ModuleRef owner;
  func::FuncOp func;
};

/// Builds graph functions: one method per graph operation, values checked
/// by the operations' verifiers as they are built (MLIRError).
class GraphBuilder : public BuilderBase<func::FuncOp> {
public:
  using BuilderBase::BuilderBase;
  std::vector<std::string> resultNames;

  GraphFunctionHandle
  createFunction(const ModuleRef &target, const std::string &name,
                 const std::vector<std::pair<std::string, TypeHandle>> &params,
                 const std::vector<std::string> &results) {
    SmallVector<Type> types;
    for (const auto &[paramName, type] : params) {
      if (!isa<RankedTensorType>(type.type))
        throw py::type_error("parameter '" + paramName +
                             "' must be a ranked tensor, got " +
                             printed(type.type));
      types.push_back(type.type);
    }
    builder.setInsertionPointToEnd(target->module->getBody());
    auto function =
        func::FuncOp::create(builder, loc, name, builder.getFunctionType(types, {}));
    for (auto [n, param] : llvm::enumerate(params))
      function.setArgAttr(n, "kge.param", builder.getStringAttr(param.first));
    builder.setInsertionPointToEnd(function.addEntryBlock());
    module = target;
    func = function;
    resultNames = results;
    return {target, function};
  }

  Value optional(const std::optional<ValueHandle> &value, const char *role) {
    return value ? operand(*value, role) : Value();
  }

  /// Dimension `d` of `value` (tensor.dim; a helper of the next
  /// operation).
  Value dim(Value value, int64_t d) {
    if (!isa<RankedTensorType>(value.getType()) ||
        cast<RankedTensorType>(value.getType()).getRank() <= d)
      throw py::value_error("takes the size of a tensor of rank > " +
                            std::to_string(d) + ", got " +
                            printed(value.getType()));
    auto index = arith::ConstantIndexOp::create(builder, loc, d);
    auto size = tensor::DimOp::create(builder, loc, value, index.getResult());
    helpers.push_back(index);
    helpers.push_back(size);
    return size;
  }

  Type rows(int64_t rank) {
    return RankedTensorType::get(SmallVector<int64_t>(rank, ShapedType::kDynamic),
                                 builder.getF32Type());
  }

  template <typename Enum>
  static Enum symbol(std::optional<Enum> (*parse)(StringRef),
                     const std::string &text, const char *what,
                     const char *choices) {
    std::optional<Enum> value = parse(text);
    if (!value)
      throw py::value_error(std::string(what) + " must be one of " + choices +
                            ", got '" + text + "'");
    return *value;
  }

  ValueHandle coo(const ValueHandle &src, const ValueHandle &dst,
                  const ValueHandle &etype, const ValueHandle &nodesOf,
                  const std::optional<ValueHandle> &ntype) {
    Value s = operand(src, "src"), d = operand(dst, "dst"),
          t = operand(etype, "etype"), nt = optional(ntype, "ntype");
    Value nodes = dim(operand(nodesOf, "the per-node tensor"), 0);
    return create<graph::CooOp>(graph::GraphType::get(context->get()), s, d, t,
                                nodes, nt, Value());
  }

  ValueHandle typedLinear(const ValueHandle &g, const ValueHandle &input,
                          const ValueHandle &weights, const std::string &rows,
                          const std::string &by, bool transposed) {
    auto r = symbol<graph::Rows>(graph::symbolizeRows, rows, "rows",
                                 "src, dst, edges, nodes");
    auto t = symbol<graph::TypeOf>(graph::symbolizeTypeOf, by, "by",
                                   "etype, ntype, src_ntype, dst_ntype");
    return create<graph::TypedLinearOp>(this->rows(2), operand(g, "the graph"),
                                        operand(input, "the input"),
                                        operand(weights, "the weights"), r, t,
                                        transposed);
  }

  ValueHandle linear(const ValueHandle &input, const ValueHandle &weights,
                     const std::optional<ValueHandle> &bias, bool transposed) {
    return create<graph::LinearOp>(rows(2), operand(input, "the input"),
                                   operand(weights, "the weights"),
                                   optional(bias, "the bias"), transposed);
  }

  ValueHandle aggregate(const ValueHandle &g, const ValueHandle &input,
                        const std::optional<ValueHandle> &weights,
                        const std::string &to) {
    auto end = symbol<graph::End>(graph::symbolizeEnd, to, "to", "dst, src");
    return create<graph::AggregateOp>(rows(2), operand(g, "the graph"),
                                      operand(input, "the input"),
                                      graph::EndAttr(),
                                      optional(weights, "the weights"), end,
                                      graph::Reduce::sum);
  }

  ValueHandle outerSum(const ValueHandle &g, const ValueHandle &lhs,
                       const ValueHandle &rhs,
                       const std::pair<std::string, std::string> &rowPair,
                       const std::optional<std::string> &by,
                       const std::optional<ValueHandle> &typesOf,
                       const std::optional<ValueHandle> &weights) {
    auto rowsOf = [](const std::string &text) {
      return symbol<graph::Rows>(graph::symbolizeRows, text, "rows",
                                 "src, dst, edges, nodes");
    };
    Value g0 = operand(g, "the graph"), l = operand(lhs, "lhs"),
          r = operand(rhs, "rhs"), w = optional(weights, "the weights");
    graph::Rows lhsRows = rowsOf(rowPair.first), rhsRows = rowsOf(rowPair.second);
    graph::TypeOfAttr byAttr;
    Value numTypes;
    if (by) {
      byAttr = graph::TypeOfAttr::get(
          context->get(),
          symbol<graph::TypeOf>(graph::symbolizeTypeOf, *by, "by",
                                "etype, ntype, src_ntype, dst_ntype"));
      if (!typesOf)
        throw py::value_error("outer_sum by(...) needs types_of: the weights "
                              "whose count of matrices it takes");
      numTypes = dim(operand(*typesOf, "types_of"), 0);
    }
    return create<graph::OuterSumOp>(rows(by ? 3 : 2), g0, l, r, lhsRows,
                                     rhsRows, byAttr, numTypes, w);
  }

  ValueHandle add(const ValueHandle &lhs, const ValueHandle &rhs) {
    Value a = operand(lhs, "lhs"), b = operand(rhs, "rhs");
    if (a.getType() != b.getType())
      throw py::value_error("add takes two tensors of one type, got " +
                            printed(a.getType()) + " and " +
                            printed(b.getType()));
    return {module, arith::AddFOp::create(builder, loc, a, b).getResult()};
  }

  void ret(const std::vector<ValueHandle> &values) {
    requireFunction();
    if (values.size() != resultNames.size())
      throw py::value_error("@" + func.getSymName().str() + " returns " +
                            std::to_string(resultNames.size()) +
                            " result(s) (result_names), got " +
                            std::to_string(values.size()));
    SmallVector<Value> results;
    SmallVector<Type> types;
    for (const ValueHandle &v : values) {
      results.push_back(operand(v, "a result"));
      types.push_back(results.back().getType());
    }
    FunctionType before = func.getFunctionType();
    auto ret = func::ReturnOp::create(builder, loc, results);
    func.setType(builder.getFunctionType(func.getArgumentTypes(), types));
    for (auto [n, name] : llvm::enumerate(resultNames))
      func.setResultAttr(n, "kge.param", builder.getStringAttr(name));
    DiagnosticCollector diagnostics(context->get());
    if (failed(verify(func))) {
      // As it was: the function may still be completed.
      ret->erase();
      func.setType(before);
      func.removeResAttrsAttr();
      diagnostics.fail();
    }
  }
};

} // namespace

PYBIND11_MODULE(_compiler, m) {
  m.doc() = "KGE's compiler: contexts, modules, types, builders, pass "
            "managers, PTX/bundle emission and CPU execution";

  static py::exception<MLIRError> mlirError(m, "MLIRError",
                                            PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const MLIRError &e) {
      py::object type = py::reinterpret_borrow<py::object>(mlirError.ptr());
      py::object instance = type(py::str(e.what()));
      instance.attr("diagnostics") = py::cast(e.diagnostics);
      PyErr_SetObject(mlirError.ptr(), instance.ptr());
    }
  });

  py::class_<ContextHandle, ContextRef>(m, "Context")
      .def(py::init([] { return std::make_shared<ContextHandle>(); }))
      .def_property_readonly("dialects", [](const ContextHandle &c) {
        std::vector<std::string> names;
        for (Dialect *d : c.get()->getLoadedDialects())
          names.push_back(d->getNamespace().str());
        return names;
      });

  py::class_<LocationHandle>(m, "Location")
      .def_static("unknown", [](const ContextRef &c) {
        return LocationHandle{c, UnknownLoc::get(c->get())};
      })
      .def_static(
          "file",
          [](const ContextRef &c, const std::string &filename, unsigned line,
             unsigned column) {
            return LocationHandle{c, FileLineColLoc::get(c->get(), filename, line,
                                                     column)};
          },
          py::arg("context"), py::arg("filename"), py::arg("line"),
          py::arg("column") = 1)
      .def_static(
          "name",
          [](const ContextRef &c, const std::string &name,
             std::optional<LocationHandle> child) {
            Location inner = child ? child->loc : Location(UnknownLoc::get(c->get()));
            return LocationHandle{
                c, NameLoc::get(StringAttr::get(c->get(), name), inner)};
          },
          py::arg("context"), py::arg("name"), py::arg("child") = py::none())
      .def("__str__", [](const LocationHandle &l) { return formatLocation(l.loc); })
      .def("__repr__", [](const LocationHandle &l) { return printed(l.loc); });

  py::class_<TypeHandle>(m, "Type")
      .def_static(
          "parse",
          [](const ContextRef &c, const std::string &text) {
            DiagnosticCollector diagnostics(c->get());
            Type type = parseType(text, c->get());
            if (!type)
              diagnostics.fail();
            return TypeHandle{c, type};
          },
          py::arg("context"), py::arg("text"))
      .def_static(
          "table",
          [](const ContextRef &c, const std::vector<std::optional<int64_t>> &shape,
             const std::string &dtype) {
            SmallVector<int64_t> dims;
            for (auto d : shape)
              dims.push_back(sizeOf(d));
            return makeType<bvec::TableType>(c, ArrayRef<int64_t>(dims),
                                             elementType(c->get(), dtype));
          },
          py::arg("context"), py::arg("shape"), py::arg("dtype") = "f32")
      .def_static(
          "tensor",
          [](const ContextRef &c, const std::vector<std::optional<int64_t>> &shape,
             const std::string &dtype) {
            SmallVector<int64_t> dims;
            for (auto d : shape)
              dims.push_back(sizeOf(d));
            return TypeHandle{c, RankedTensorType::get(
                                     dims, elementType(c->get(), dtype))};
          },
          py::arg("context"), py::arg("shape"), py::arg("dtype") = "f32")
      .def_static(
          "indices",
          [](const ContextRef &c, std::optional<int64_t> batch,
             const std::string &dtype) {
            return makeType<bvec::IndicesType>(c, sizeOf(batch),
                                               elementType(c->get(), dtype));
          },
          py::arg("context"), py::arg("batch") = py::none(),
          py::arg("dtype") = "i64")
      .def_static(
          "scalar",
          [](const ContextRef &c, std::optional<int64_t> batch,
             const std::string &dtype) {
            return makeType<bvec::ScalarType>(c, sizeOf(batch),
                                              elementType(c->get(), dtype));
          },
          py::arg("context"), py::arg("batch") = py::none(),
          py::arg("dtype") = "f32")
      .def_static(
          "vec",
          [](const ContextRef &c, std::optional<int64_t> batch,
             std::optional<int64_t> length, const std::string &dtype) {
            return makeType<bvec::VecType>(c, sizeOf(batch), sizeOf(length),
                                           elementType(c->get(), dtype));
          },
          py::arg("context"), py::arg("batch") = py::none(),
          py::arg("length") = py::none(), py::arg("dtype") = "f32")
      .def_static(
          "mat",
          [](const ContextRef &c, std::optional<int64_t> batch,
             std::optional<int64_t> rows, std::optional<int64_t> cols,
             const std::string &dtype) {
            return makeType<bvec::MatType>(c, sizeOf(batch), sizeOf(rows),
                                           sizeOf(cols),
                                           elementType(c->get(), dtype));
          },
          py::arg("context"), py::arg("batch") = py::none(),
          py::arg("rows") = py::none(), py::arg("cols") = py::none(),
          py::arg("dtype") = "f32")
      .def_property_readonly("kind", [](const TypeHandle &t) { return typeKind(t.type); })
      .def_property_readonly("shape", [](const TypeHandle &t) { return typeShape(t.type); })
      .def_property_readonly("dtype",
                             [](const TypeHandle &t) -> std::optional<std::string> {
                               Type e = elementTypeOf(t.type);
                               if (!e)
                                 return std::nullopt;
                               return printed(e);
                             })
      .def("__str__", [](const TypeHandle &t) { return printed(t.type); })
      .def("__repr__", [](const TypeHandle &t) { return "Type(" + printed(t.type) + ")"; })
      .def("__eq__", [](const TypeHandle &a, const TypeHandle &b) { return a.type == b.type; })
      .def("__hash__", [](const TypeHandle &t) {
        return static_cast<size_t>(hash_value(t.type));
      });

  py::class_<AttributeHandle>(m, "Attribute")
      .def_static(
          "parse",
          [](const ContextRef &c, const std::string &text) {
            DiagnosticCollector diagnostics(c->get());
            Attribute attr = parseAttribute(text, c->get());
            if (!attr)
              diagnostics.fail();
            return AttributeHandle{c, attr};
          },
          py::arg("context"), py::arg("text"))
      .def("__str__", [](const AttributeHandle &a) { return printed(a.attr); })
      .def("__eq__", [](const AttributeHandle &a, const AttributeHandle &b) {
        return a.attr == b.attr;
      });

  py::class_<ValueHandle>(m, "Value")
      .def_property_readonly("type", [](const ValueHandle &v) {
        return TypeHandle{v.owner->context, v.value.getType()};
      })
      .def_property_readonly("name", [](const ValueHandle &v) -> std::optional<std::string> {
        auto arg = dyn_cast<BlockArgument>(v.value);
        if (!arg)
          return std::nullopt;
        auto func = dyn_cast<bvec::FuncOp>(arg.getOwner()->getParentOp());
        if (!func)
          return std::nullopt;
        return func.getArgName(arg.getArgNumber()).str();
      })
      .def_property_readonly("owner_name", [](const ValueHandle &v) -> std::optional<std::string> {
        if (Operation *op = v.value.getDefiningOp())
          return op->getName().getStringRef().str();
        return std::nullopt;
      })
      .def("__str__", [](const ValueHandle &v) {
        std::string text;
        llvm::raw_string_ostream os(text);
        v.value.printAsOperand(os, OpPrintingFlags());
        return text;
      });

  py::class_<FunctionHandle>(m, "Function")
      .def_property_readonly("name", [](FunctionHandle f) {
        return f.func.getSymName().str();
      })
      .def_property_readonly("arguments", [](FunctionHandle f) {
        std::vector<ValueHandle> values;
        for (BlockArgument arg : f.func.getArguments())
          values.push_back({f.owner, arg});
        return values;
      })
      .def("argument", [](FunctionHandle f, const std::string &name) {
        BlockArgument arg = f.func.getArgumentByName(name);
        if (!arg)
          throw py::key_error("@" + f.func.getSymName().str() +
                              " has no argument '" + name + "'");
        return ValueHandle{f.owner, arg};
      })
      .def_property_readonly("argument_names", [](FunctionHandle f) {
        std::vector<std::string> names;
        for (unsigned i = 0; i < f.func.getNumArguments(); ++i)
          names.push_back(f.func.getArgName(i).str());
        return names;
      })
      .def_property_readonly("result_names", [](FunctionHandle f) {
        std::vector<std::string> names;
        for (unsigned i = 0; i < f.func.getResultNames().size(); ++i)
          names.push_back(f.func.getResultName(i).str());
        return names;
      })
      .def("__str__", [](FunctionHandle f) { return printedOp(f.func); });

  py::class_<ModuleHandle, ModuleRef>(m, "Module")
      .def_static("parse", &parseModule, py::arg("context"), py::arg("text"),
                  py::arg("filename") = "<string>")
      .def_property_readonly("context", [](const ModuleHandle &mod) { return mod.context; })
      .def("verify", [](const ModuleHandle &mod) {
        DiagnosticCollector diagnostics(mod.context->get());
        diagnostics.check(verify(mod.op()));
      })
      .def("clone", [](const ModuleHandle &mod) {
        return std::make_shared<ModuleHandle>(
            ModuleHandle{mod.context, OwningOpRef<ModuleOp>(mod.op().clone())});
      })
      .def_property_readonly("functions", &functionsOf)
      .def(
          "function",
          [](const ModuleRef &mod, const std::string &name) {
            return FunctionHandle{mod, findFunction(mod, name)};
          },
          py::arg("name") = "",
          "The bvec.func called `name` (the only one when empty)")
      .def(
          "print",
          [](const ModuleHandle &mod, bool generic, bool debugInfo) {
            OpPrintingFlags flags;
            if (generic)
              flags.printGenericOpForm();
            if (debugInfo)
              flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
            std::string text;
            llvm::raw_string_ostream os(text);
            mod.op()->print(os, flags);
            return text;
          },
          py::arg("generic") = false, py::arg("debug_info") = false)
      .def("__str__", [](const ModuleHandle &mod) { return printedOp(mod.op()); });

  py::class_<IRBuilder>(m, "Builder")
      .def(py::init<ContextRef>(), py::arg("context"))
      .def_property(
          "loc",
          [](const IRBuilder &b) { return LocationHandle{b.context, b.loc}; },
          [](IRBuilder &b, const LocationHandle &l) { b.loc = l.loc; })
      .def("create_module", &IRBuilder::createModule)
      .def("create_function", &IRBuilder::createFunction, py::arg("module"),
           py::arg("name"), py::arg("params"),
           py::arg("result_names") = std::vector<std::string>{"score"})
      .def("set_insertion_point_to_end", &IRBuilder::setInsertionPointToEnd)
      .def("gather_vec", [](IRBuilder &b, const ValueHandle &t, const ValueHandle &i) {
        return b.gather(t, i, false);
      })
      .def("gather_mat", [](IRBuilder &b, const ValueHandle &t, const ValueHandle &i) {
        return b.gather(t, i, true);
      })
      .def("constant", &IRBuilder::constant, py::arg("type"), py::arg("value"))
      .def("add", &IRBuilder::binary<bvec::AddOp>)
      .def("sub", &IRBuilder::binary<bvec::SubOp>)
      .def("mul", &IRBuilder::binary<bvec::MulOp>)
      .def("div", &IRBuilder::binary<bvec::DivOp>)
      .def("max", &IRBuilder::binary<bvec::MaxOp>)
      .def("min", &IRBuilder::binary<bvec::MinOp>)
      .def("neg", &IRBuilder::unary<bvec::NegOp>)
      .def("abs", &IRBuilder::unary<bvec::AbsOp>)
      .def("exp", &IRBuilder::unary<bvec::ExpOp>)
      .def("log", &IRBuilder::unary<bvec::LogOp>)
      .def("sqrt", &IRBuilder::unary<bvec::SqrtOp>)
      .def("tanh", &IRBuilder::unary<bvec::TanhOp>)
      .def("sigmoid", &IRBuilder::unary<bvec::SigmoidOp>)
      .def("sin", &IRBuilder::unary<bvec::SinOp>)
      .def("cos", &IRBuilder::unary<bvec::CosOp>)
      .def("scal_mul_vec", &IRBuilder::scalMulVec)
      .def("vec_mul_vec", &IRBuilder::vecMulVec)
      .def("vec_mul_mat", &IRBuilder::vecMulMat)
      .def("vec_outer_vec", &IRBuilder::vecOuterVec)
      .def("norm", &IRBuilder::norm, py::arg("input"), py::arg("p") = 2)
      .def("reduce", &IRBuilder::reduce, py::arg("input"), py::arg("kind"))
      .def("slice", &IRBuilder::slice, py::arg("input"), py::arg("offset"),
           py::arg("length"))
      .def("ret", &IRBuilder::ret);

  py::class_<GraphFunctionHandle>(m, "GraphFunction")
      .def_property_readonly("name", [](GraphFunctionHandle f) {
        return f.func.getSymName().str();
      })
      .def_property_readonly("arguments", [](GraphFunctionHandle f) {
        std::vector<ValueHandle> values;
        for (BlockArgument arg : f.func.getArguments())
          values.push_back({f.owner, arg});
        return values;
      });

  py::class_<GraphBuilder>(m, "GraphBuilder")
      .def(py::init<ContextRef>(), py::arg("context"))
      .def("create_module", &GraphBuilder::createModule)
      .def("create_function", &GraphBuilder::createFunction, py::arg("module"),
           py::arg("name"), py::arg("params"),
           py::arg("result_names") = std::vector<std::string>{"out"})
      .def("coo", &GraphBuilder::coo, py::arg("src"), py::arg("dst"),
           py::arg("etype"), py::arg("nodes_of"), py::arg("ntype") = py::none())
      .def("typed_linear", &GraphBuilder::typedLinear, py::arg("graph"),
           py::arg("input"), py::arg("weights"), py::arg("rows") = "src",
           py::arg("by") = "etype", py::arg("transposed") = false)
      .def("linear", &GraphBuilder::linear, py::arg("input"), py::arg("weights"),
           py::arg("bias") = py::none(), py::arg("transposed") = false)
      .def("aggregate", &GraphBuilder::aggregate, py::arg("graph"),
           py::arg("input"), py::arg("weights") = py::none(),
           py::arg("to") = "dst")
      .def("outer_sum", &GraphBuilder::outerSum, py::arg("graph"), py::arg("lhs"),
           py::arg("rhs"), py::arg("rows") = std::make_pair(std::string("nodes"),
                                                            std::string("nodes")),
           py::arg("by") = py::none(), py::arg("types_of") = py::none(),
           py::arg("weights") = py::none())
      .def("add", &GraphBuilder::add)
      .def("ret", &GraphBuilder::ret);

  py::class_<PassManagerHandle>(m, "PassManager")
      .def(py::init<ContextRef>(), py::arg("context"))
      .def("add", &PassManagerHandle::add, py::arg("pipeline"),
           "Appends a textual pass pipeline ('canonicalize,cse', "
           "'kge-lower-to-gpu{negative=t}', 'builtin.module(...)')")
      .def("enable_verifier",
           [](PassManagerHandle &p, bool on) { p.pm->enableVerifier(on); },
           py::arg("enabled") = true)
      .def("run", &PassManagerHandle::run, py::arg("module"))
      .def("__str__", &PassManagerHandle::str);

  m.def(
      "to_ptx",
      [](const ModuleRef &mod, const std::string &chip) {
        DiagnosticCollector diagnostics(mod->context->get());
        kge::PTXOptions options;
        options.chip = chip;
        FailureOr<std::vector<kge::PTXModule>> ptx =
            kge::serializeToPTX(*mod->module, options);
        if (failed(ptx))
          diagnostics.fail();
        std::vector<std::pair<std::string, std::string>> result;
        for (const kge::PTXModule &p : *ptx)
          result.emplace_back(p.name, p.ptx);
        return result;
      },
      py::arg("module"), py::arg("chip") = "sm_90",
      "PTX of every gpu.module of a lowered module: [(name, ptx)]");
  m.def(
      "to_bundle",
      [](const ModuleRef &mod, bool cubin) {
        DiagnosticCollector diagnostics(mod->context->get());
        kge::BundleOptions options;
        options.cubin = cubin;
        FailureOr<std::string> bundle =
            kge::translateToBundle(*mod->module, options);
        if (failed(bundle))
          diagnostics.fail();
        return *bundle;
      },
      py::arg("module"), py::arg("cubin") = true,
      "The kernel bundle (JSON text) of a module lowered by kge-lower-to-gpu");
  m.def("parse_gamut", &parseGamutQuery, py::arg("context"), py::arg("text"),
        py::arg("name") = "query",
        py::arg("dtypes") = std::map<std::string, std::string>(),
        py::arg("filename") = "<query>",
        "A module holding the tile function of a query in GAMUT's "
        "declarative syntax");
  m.def(
      "signature",
      [](const ModuleRef &mod, const std::string &name) {
        DiagnosticCollector diagnostics(mod->context->get());
        FailureOr<kge_runtime::Signature> signature = failure();
        func::FuncOp tileFunc = findTileFunction(mod, name);
        if (tileFunc)
          signature = tile::computeSignature(tileFunc);
        else
          signature = bvec::computeSignature(findFunction(mod, name));
        if (failed(signature))
          diagnostics.fail();
        std::string text;
        llvm::raw_string_ostream os(text);
        os << llvm::json::Value(kge::signatureToJSON(*signature));
        return jsonToPython(text);
      },
      py::arg("module"), py::arg("function") = "",
      "The parameter list of a bvec.func (names, roles, dtypes, symbolic "
      "shapes) as a dict");

  py::class_<CpuFunctionHandle>(m, "CpuFunction")
      .def_static(
          "compile",
          [](const ModuleRef &mod, const std::string &name) {
            func::FuncOp tileFunc = findTileFunction(mod, name);
            std::string symbol =
                tileFunc ? tileFunc.getSymName().str()
                         : findFunction(mod, name).getSymName().str();
            DiagnosticCollector diagnostics(mod->context->get());
            std::string error;
            auto function =
                kge::CpuFunction::compile(*mod->module, symbol, error);
            if (!function) {
              if (!error.empty())
                diagnostics.messages.push_back(error);
              diagnostics.fail();
            }
            return CpuFunctionHandle{std::move(function)};
          },
          py::arg("module"), py::arg("function") = "")
      .def("__call__", &CpuFunctionHandle::call, py::arg("inputs"),
           py::arg("batch_size") = py::none());
}
