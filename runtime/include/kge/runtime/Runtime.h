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
  friend class CapturedCall;
  Program(Manifest manifest, int device);
  /// The checks of a call and its launches on `stream` with `scratch` (an
  /// Impl::StreamScratch); dependent launches only with `mayDepend`.
  void launch(const Bindings &bindings,
              const std::vector<DeviceArray> &arguments,
              const std::vector<DeviceArray> &results,
              const CallOptions &options, void *scratch, uint64_t stream,
              bool mayDepend);
  Manifest manifest_;
  int device_;
  std::unique_ptr<Impl> impl_;
};

/// One call of a program captured in a CUDA graph: its launch plan for one
/// set of arrays, replayed with a single cuGraphLaunch (a few microseconds
/// of host time, whatever the plan). The arrays' addresses are part of the
/// graph: a caller writes the next inputs into the same arrays and reads
/// the results from the same arrays (like torch.cuda.CUDAGraph's static
/// inputs), and keeps them alive as long as the captured call. The call
/// owns its scratch buffers.
class CapturedCall {
public:
  /// Checks the arrays like Program::call, runs the plan once on a stream
  /// of its own (allocating its scratch buffers), then captures it. Throws
  /// ArgumentError (bad arrays; checked mode, which synchronizes, cannot be
  /// captured) or CudaError.
  CapturedCall(std::shared_ptr<Program> program,
               const std::vector<DeviceArray> &arguments,
               const std::vector<DeviceArray> &results,
               const CallOptions &options = {});
  ~CapturedCall();
  CapturedCall(const CapturedCall &) = delete;
  CapturedCall &operator=(const CapturedCall &) = delete;

  /// Launches the captured plan on `stream` (0: the legacy default stream).
  void replay(uint64_t stream = 0);

  const Program &program() const { return *program_; }

private:
  struct State;
  std::shared_ptr<Program> program_;
  std::unique_ptr<State> state_;
};

/// Number of CUDA devices (0 when there is no driver).
int deviceCount();

} // namespace kge_runtime

#endif // KGE_RUNTIME_RUNTIME_H
