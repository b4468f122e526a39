//===- kge-cpu-runner.cpp - run a bvec function on the CPU ----------------===//
//
// Runs a `bvec.func` through the CPU execution path (kge-lower-to-cpu +
// MLIR's ExecutionEngine) on arrays read from .npy files or on random
// inputs, and writes or prints the results.
//
//   kge-cpu-runner transe.mlir --arg Eemb=E.npy --arg h=h.npy ... \
//       --out score=score.npy
//   kge-cpu-runner transe.mlir --random --batch-size 4 --print
//
//===----------------------------------------------------------------------===//

#include "ExecutionEngine/CpuRunner.h"
#include "InitAll.h"
#include "Npy.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <map>
#include <random>

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<input .mlir file>"),
                                          cl::init("-"));
static cl::opt<std::string> functionName(
    "function", cl::desc("bvec.func to run (default: the only one)"),
    cl::init(""));
static cl::list<std::string>
    argFiles("arg", cl::desc("NAME=FILE.npy: an argument of the function"));
static cl::list<std::string>
    outFiles("out", cl::desc("NAME=FILE.npy: where to write a result"));
static cl::opt<int64_t> batchSize(
    "batch-size",
    cl::desc("batch size when no index array gives it, or of random inputs"),
    cl::init(-1));
static cl::opt<bool> randomInputs(
    "random", cl::desc("fill arguments not given by --arg with random data"),
    cl::init(false));
static cl::opt<int64_t> randomRows(
    "random-rows", cl::desc("row count of random tables of dynamic size"),
    cl::init(100));
static cl::opt<int64_t> randomLength(
    "random-length", cl::desc("dynamic item length of random tables"),
    cl::init(16));
static cl::opt<unsigned> seed("seed", cl::desc("seed of random inputs"),
                              cl::init(0));
static cl::opt<bool> printResults("print",
                                  cl::desc("print the results to stdout"),
                                  cl::init(false));

static int fail(const std::string &message) {
  llvm::errs() << "kge-cpu-runner: error: " << message << "\n";
  return 1;
}

/// Splits "NAME=VALUE".
static bool splitAssignment(const std::string &text, std::string &name,
                            std::string &value) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

/// Random data for parameter `param` with concrete `shape`.
static npy::NpyArray randomArray(const kge_runtime::Parameter &param,
                                 const kge_runtime::Signature &signature,
                                 const std::vector<int64_t> &shape,
                                 const std::map<std::string, int64_t> &rows,
                                 std::mt19937_64 &rng) {
  npy::NpyArray array;
  array.dtype = param.dtype;
  array.shape = shape;
  int64_t n = array.numElements();
  array.bytes.resize(n * kge_runtime::dtypeSize(param.dtype));
  if (param.role == kge_runtime::ParamRole::Indices) {
    int64_t bound = INT64_MAX;
    for (unsigned table : param.indexedTables)
      bound = std::min(bound, rows.at(signature.params[table].name));
    if (bound == INT64_MAX)
      bound = 1;
    std::uniform_int_distribution<int64_t> dist(0, bound - 1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = dist(rng);
      if (param.dtype == kge_runtime::DType::I32)
        reinterpret_cast<int32_t *>(array.bytes.data())[i] =
            static_cast<int32_t>(v);
      else
        reinterpret_cast<int64_t *>(array.bytes.data())[i] = v;
    }
    return array;
  }
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t i = 0; i < n; ++i) {
    double v = dist(rng);
    if (param.dtype == kge_runtime::DType::F64)
      reinterpret_cast<double *>(array.bytes.data())[i] = v;
    else
      reinterpret_cast<float *>(array.bytes.data())[i] = static_cast<float>(v);
  }
  return array;
}

static double elementAsDouble(const npy::NpyArray &array, int64_t i) {
  switch (array.dtype) {
  case kge_runtime::DType::F32:
    return reinterpret_cast<const float *>(array.bytes.data())[i];
  case kge_runtime::DType::F64:
    return reinterpret_cast<const double *>(array.bytes.data())[i];
  case kge_runtime::DType::I32:
    return reinterpret_cast<const int32_t *>(array.bytes.data())[i];
  case kge_runtime::DType::I64:
    return static_cast<double>(
        reinterpret_cast<const int64_t *>(array.bytes.data())[i]);
  default:
    return NAN;
  }
}

static void printArray(llvm::raw_ostream &os, const std::string &name,
                       const npy::NpyArray &array) {
  os << name << ": shape [";
  for (size_t d = 0; d < array.shape.size(); ++d)
    os << (d ? ", " : "") << array.shape[d];
  os << "] " << kge_runtime::dtypeName(array.dtype) << "\n";
  int64_t rowLength = array.shape.size() > 1
                          ? array.numElements() / std::max<int64_t>(
                                                      array.shape[0], 1)
                          : 1;
  for (int64_t b = 0; b < (array.shape.empty() ? 1 : array.shape[0]); ++b) {
    os << "  [" << b << "]";
    for (int64_t k = 0; k < std::min<int64_t>(rowLength, 8); ++k)
      os << ' ' << llvm::format("%.6g", elementAsDouble(array, b * rowLength + k));
    if (rowLength > 8)
      os << " ...";
    os << "\n";
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "KGE CPU runner\n");

  DialectRegistry registry;
  kge::registerAllDialects(registry);
  MLIRContext context(registry);

  std::string error;
  auto file = openInputFile(inputFilename, &error);
  if (!file)
    return fail(error);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  std::unique_ptr<kge::CpuFunction> function;
  {
    // Diagnostics go into `error` through the runner's own handler.
    function = kge::CpuFunction::compile(*module, functionName, error);
  }
  if (!function)
    return fail(error);
  const kge_runtime::Signature &signature = function->signature();

  std::map<std::string, std::string> argPaths, outPaths;
  for (auto &[list, map] : {std::pair(&argFiles, &argPaths),
                            std::pair(&outFiles, &outPaths)})
    for (const std::string &item : *list) {
      std::string name, path;
      if (!splitAssignment(item, name, path))
        return fail("expected NAME=FILE, got '" + item + "'");
      int index = signature.find(name);
      bool isResult = index >= 0 &&
                      signature.params[index].role == kge_runtime::ParamRole::Result;
      if (index < 0 || isResult != (map == &outPaths))
        return fail("'" + signature.name + "' has no " +
                    (map == &outPaths ? "result" : "argument") + " named '" +
                    name + "'");
      (*map)[name] = path;
    }

  // Load or generate the arguments. Random tables take their dynamic sizes
  // from --random-rows/--random-length; random indices stay within tables.
  std::optional<int64_t> batch;
  if (batchSize >= 0)
    batch = batchSize;
  std::vector<npy::NpyArray> inputs(signature.numArguments());
  std::map<std::string, int64_t> rows;
  std::mt19937_64 rng(seed);
  for (unsigned pass = 0; pass < 2; ++pass) {
    // Tables first so that random indices know their bounds.
    for (unsigned i = 0; i < signature.numArguments(); ++i) {
      const kge_runtime::Parameter &param = signature.params[i];
      bool isTable = param.role == kge_runtime::ParamRole::Table;
      if (isTable != (pass == 0))
        continue;
      auto it = argPaths.find(param.name);
      if (it != argPaths.end()) {
        if (!npy::readNpy(it->second, inputs[i], error))
          return fail(error);
      } else if (randomInputs) {
        std::vector<int64_t> shape;
        for (const kge_runtime::Dim &dim : param.shape) {
          if (dim.isStatic())
            shape.push_back(dim.size);
          else if (dim.symbol == "B")
            shape.push_back(batch.value_or(4));
          else if (&dim == &param.shape.front())
            shape.push_back(randomRows);
          else
            shape.push_back(randomLength);
        }
        inputs[i] = randomArray(param, signature, shape, rows, rng);
      } else {
        return fail("missing argument '" + param.name +
                    "' (pass --arg " + param.name + "=FILE.npy or --random)");
      }
      if (isTable && !inputs[i].shape.empty())
        rows[param.name] = inputs[i].shape[0];
    }
  }

  std::vector<kge::HostArray> arguments;
  for (npy::NpyArray &array : inputs)
    arguments.push_back({array.bytes.data(), array.dtype, array.shape});
  std::vector<std::vector<int64_t>> shapes;
  if (!function->resultShapes(arguments, batch, shapes, error))
    return fail(error);
  std::vector<npy::NpyArray> outputs(shapes.size());
  std::vector<kge::HostArray> results;
  for (unsigned r = 0; r < shapes.size(); ++r) {
    const kge_runtime::Parameter &param =
        signature.params[signature.numArguments() + r];
    outputs[r].dtype = param.dtype;
    outputs[r].shape = shapes[r];
    outputs[r].bytes.assign(
        outputs[r].numElements() * kge_runtime::dtypeSize(param.dtype), 0);
    results.push_back(
        {outputs[r].bytes.data(), outputs[r].dtype, outputs[r].shape});
  }
  if (!function->run(arguments, results, batch, error))
    return fail(error);

  for (unsigned r = 0; r < outputs.size(); ++r) {
    const std::string &name =
        signature.params[signature.numArguments() + r].name;
    auto it = outPaths.find(name);
    if (it != outPaths.end() && !npy::writeNpy(it->second, outputs[r], error))
      return fail(error);
    if (printResults)
      printArray(llvm::outs(), name, outputs[r]);
  }
  return 0;
}
