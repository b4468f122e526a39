//===- Runtime.h - loading and launching kernel bundles ---------*- C++ -*-===//
//
// A Program is a bundle loaded on one GPU: its PTX (or cubin) linked with
// the device library by the CUDA JIT linker, its kernels resolved. Calling
// it checks every array against the signature (dtype, rank, shape, device,
// contiguity, alignment), evaluates the launch plan's sizes and launches it
// on a stream. Programs are cached per (bundle, device); loading and calling
// are safe from several threads at once.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_RUNTIME_H
#define KGE_RUNTIME_RUNTIME_H

#include "kge/runtime/Manifest.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kge_runtime {

/// An array in device memory passed to a call.
struct DeviceArray {
  uint64_t data = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Strides in elements; empty means C-contiguous.
  std::vector<int64_t> strides;
  /// CUDA device ordinal; -1 asks the driver, -2 marks host memory.
  int device = -1;
};

struct CallOptions {
  /// CUstream handle (0: the legacy default stream).
  uint64_t stream = 0;
  /// Verify every index against its tables on the GPU first (synchronizes).
  bool checked = false;
  /// Batch size when no index array gives it.
  std::optional<int64_t> batchSize;
};

class Program {
public:
  /// Loads `bundleText` on `device`, or returns the cached program. Throws
  /// BundleError (bad bundle, missing kernel) or CudaError.
  static std::shared_ptr<Program> load(const std::string &bundleText,
                                       int device = 0);
  ~Program();

  const Manifest &manifest() const { return manifest_; }
  int device() const { return device_; }

  /// Checks the arguments (dtypes, ranks, sizes) and returns the sizes of
  /// the call. Throws ArgumentError.
  Bindings bind(const std::vector<DeviceArray> &arguments,
                std::optional<int64_t> batchSize = std::nullopt) const;

  /// The shapes of the results for `bindings`.
  std::vector<std::vector<int64_t>> resultShapes(const Bindings &bindings) const;

  /// Runs the bundle: `arguments` in the signature's order, `results`
  /// preallocated with the shapes resultShapes gives. Throws ArgumentError,
  /// IndexRangeError (checked mode) or CudaError; the program stays usable.
  void call(const std::vector<DeviceArray> &arguments,
            const std::vector<DeviceArray> &results,
            const CallOptions &options = {});

  /// The same, with `bindings` from bind() on the same arguments.
  void call(const Bindings &bindings,
            const std::vector<DeviceArray> &arguments,
            const std::vector<DeviceArray> &results,
            const CallOptions &options = {});

  struct Impl;

private:
  Program(Manifest manifest, int device);
  Manifest manifest_;
  int device_;
  std::unique_ptr<Impl> impl_;
};

/// Number of CUDA devices (0 when there is no driver).
int deviceCount();

} // namespace kge_runtime

#endif // KGE_RUNTIME_RUNTIME_H
