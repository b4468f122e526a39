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

/// The launch plan of one set of argument shapes: the call's sizes, the
/// shapes of its results, and every step's grid, shared memory and scalar
/// parameters, evaluated once. A program keeps the plans of the shapes it
/// was called with, so a call with shapes seen before only reads the
/// arrays' addresses, checks their placement and launches.
struct LaunchPlan {
  Bindings bindings;
  std::vector<std::vector<int64_t>> resultShapes;

  struct Steps;
  /// What the launches need (opaque; built by Program::plan).
  std::shared_ptr<const Steps> steps;
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

  /// The launch plan of the arguments' shapes (checked like bind), from
  /// the program's cache of plans or built and cached. Throws
  /// ArgumentError (bad arguments, or sizes no launch can run).
  std::shared_ptr<const LaunchPlan>
  plan(const std::vector<DeviceArray> &arguments,
       std::optional<int64_t> batchSize = std::nullopt);

  /// Runs the bundle: `arguments` in the signature's order, `results`
  /// preallocated with the shapes of plan(arguments).resultShapes. Throws
  /// ArgumentError, IndexRangeError (checked mode) or CudaError; the
  /// program stays usable.
  void call(const std::vector<DeviceArray> &arguments,
            const std::vector<DeviceArray> &results,
            const CallOptions &options = {});

  /// The same, with the plan of the same arguments (refused, with an
  /// ArgumentError, when it is another program's or other arrays').
  void call(const LaunchPlan &plan, const std::vector<DeviceArray> &arguments,
            const std::vector<DeviceArray> &results,
            const CallOptions &options = {});

  /// How many launch plans the program holds (one per set of shapes).
  size_t numPlans() const;

  struct Impl;

private:
  friend class CapturedCall;
  Program(Manifest manifest, int device);
  /// Evaluates the launch plan of `bindings`; throws ArgumentError.
  std::shared_ptr<const LaunchPlan> buildPlan(Bindings bindings,
                                              std::vector<int64_t> key);
  /// The checks of a call and its launches on `stream` with `scratch` (an
  /// Impl::StreamScratch); dependent launches only with `mayDepend`.
  void launch(const LaunchPlan &plan,
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
