//===- CpuRunner.h - run bvec functions on the CPU --------------*- C++ -*-===//
//
// The CPU execution path: a `bvec.func` is lowered with the
// `kge-lower-to-cpu` pipeline and JIT-compiled by MLIR's ExecutionEngine.
// Arguments are checked against the function's signature (dtypes, shapes,
// index ranges) before anything runs, so bad input gives an error message
// instead of a crash.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_EXECUTIONENGINE_CPURUNNER_H
#define KGE_EXECUTIONENGINE_CPURUNNER_H

#include "kge/runtime/Signature.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ExecutionEngine;

namespace kge {

/// A dense row-major array in host memory (not owned).
struct HostArray {
  void *data = nullptr;
  kge_runtime::DType dtype = kge_runtime::DType::F32;
  std::vector<int64_t> shape;
};

/// A bvec function compiled for the host CPU.
class CpuFunction {
public:
  ~CpuFunction();

  /// Compiles the `bvec.func` called `name` of `module` (the only one when
  /// `name` is empty). The module is not modified. On failure returns null
  /// and sets `error`.
  static std::unique_ptr<CpuFunction> compile(ModuleOp module, StringRef name,
                                              std::string &error);

  const kge_runtime::Signature &signature() const { return signature_; }

  /// Checks `arguments` and computes the shapes of the results. `batchSize`
  /// is needed only when no index array determines the batch.
  bool resultShapes(const std::vector<HostArray> &arguments,
                    std::optional<int64_t> batchSize,
                    std::vector<std::vector<int64_t>> &shapes,
                    std::string &error) const;

  /// Checks the arguments (dtypes, shapes, every index within its tables)
  /// and the result buffers, then runs the function.
  bool run(const std::vector<HostArray> &arguments,
           const std::vector<HostArray> &results,
           std::optional<int64_t> batchSize, std::string &error) const;

private:
  CpuFunction() = default;
  bool bind(const std::vector<HostArray> &arguments,
            std::optional<int64_t> batchSize, kge_runtime::Bindings &bindings,
            std::string &error) const;

  kge_runtime::Signature signature_;
  std::unique_ptr<ExecutionEngine> engine_;
};

} // namespace kge
} // namespace mlir

#endif // KGE_EXECUTIONENGINE_CPURUNNER_H
