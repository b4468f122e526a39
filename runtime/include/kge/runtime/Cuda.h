//===- Cuda.h - the CUDA driver API, loaded at run time ---------*- C++ -*-===//
//
// The runtime has no link-time CUDA dependency: libcuda.so.1 is opened with
// dlopen the first time a GPU is used, and the few driver entry points the
// runtime needs are looked up by name. The types below mirror cuda.h.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_CUDA_H
#define KGE_RUNTIME_CUDA_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kge_runtime {
namespace cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUlinkState = struct CUlinkState_st *;
using CUstream = struct CUstream_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

enum : int {
  CUDA_SUCCESS = 0,
  CU_JIT_INPUT_PTX = 1,
  CU_JIT_INPUT_CUBIN = 0,
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CU_MEMORYTYPE_HOST = 1,
  CU_MEMORYTYPE_DEVICE = 2,
  CU_MEMORYTYPE_UNIFIED = 4,
  CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
  CU_STREAM_NON_BLOCKING = 1,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
};

/// cuLaunchKernelEx's attribute (id, padding, a 64-byte value union) and
/// configuration, as in cuda.h.
struct alignas(8) CUlaunchAttribute {
  int id;
  char pad[4];
  union alignas(8) {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
  } value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(CUlaunchAttribute) == 72 &&
                  alignof(CUlaunchAttribute) == 8 &&
                  offsetof(CUlaunchAttribute, value) == 8,
              "mirrors cuda.h");
static_assert(sizeof(CUlaunchConfig) == 56 &&
                  offsetof(CUlaunchConfig, hStream) == 32 &&
                  offsetof(CUlaunchConfig, attrs) == 40 &&
                  offsetof(CUlaunchConfig, numAttrs) == 48,
              "mirrors cuda.h");

/// The driver entry points, resolved once.
struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxGetCurrent)(CUcontext *);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuLinkCreate)(unsigned, int *, void **, CUlinkState *);
  CUresult (*cuLinkAddData)(CUlinkState, int, void *, size_t, const char *,
                            unsigned, int *, void **);
  CUresult (*cuLinkComplete)(CUlinkState, void **, size_t *);
  CUresult (*cuLinkDestroy)(CUlinkState);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuFuncGetAttribute)(int *, int, CUfunction);
  /// Null with drivers older than CUDA 12.0 (no tensor maps).
  CUresult (*cuTensorMapEncodeTiled)(void *, int, unsigned, void *,
                                     const uint64_t *, const uint64_t *,
                                     const unsigned *, const unsigned *, int,
                                     int, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  /// Null with drivers older than CUDA 12.0 (no programmatic launches).
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **,
                               void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned int, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuPointerGetAttribute)(void *, int, CUdeviceptr);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Streams and graphs: captured calls.
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
};

/// The driver, loaded and initialized on first use. Throws CudaError when
/// libcuda.so.1 or a GPU is missing.
const Driver &driver();

/// Throws CudaError "<what> failed: NAME: description".
[[noreturn]] void fail(CUresult result, const std::string &what);

/// Throws unless `result` is CUDA_SUCCESS. `what` names the operation: a
/// string, or a callable returning one. It becomes a std::string only on
/// failure, so checks on the per-call path allocate nothing.
template <typename What> void check(CUresult result, What &&what) {
  if (result == CUDA_SUCCESS)
    return;
  if constexpr (std::is_invocable_v<What>)
    fail(result, what());
  else
    fail(result, std::string(what));
}

} // namespace cuda
} // namespace kge_runtime

#endif // KGE_RUNTIME_CUDA_H
