//===- Cuda.cpp - the CUDA driver API, loaded at run time -----------------===//

#include "kge/runtime/Cuda.h"
#include "kge/runtime/Error.h"

#include <dlfcn.h>

#include <mutex>

namespace kge_runtime {
namespace cuda {

namespace {
template <typename Fn>
void resolve(void *library, Fn &fn, const char *name) {
  fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (!fn)
    throw CudaError(std::string("the CUDA driver has no '") + name + "'");
}

Driver load() {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    throw CudaError(std::string("cannot load the CUDA driver libcuda.so.1: ") +
                    dlerror());
  Driver d{};
  resolve(library, d.cuInit, "cuInit");
  resolve(library, d.cuDriverGetVersion, "cuDriverGetVersion");
  resolve(library, d.cuDeviceGetCount, "cuDeviceGetCount");
  resolve(library, d.cuDeviceGet, "cuDeviceGet");
  resolve(library, d.cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(library, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(library, d.cuCtxGetCurrent, "cuCtxGetCurrent");
  resolve(library, d.cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(library, d.cuCtxSynchronize, "cuCtxSynchronize");
  resolve(library, d.cuLinkCreate, "cuLinkCreate_v2");
  resolve(library, d.cuLinkAddData, "cuLinkAddData_v2");
  resolve(library, d.cuLinkComplete, "cuLinkComplete");
  resolve(library, d.cuLinkDestroy, "cuLinkDestroy");
  resolve(library, d.cuModuleLoadData, "cuModuleLoadData");
  resolve(library, d.cuModuleUnload, "cuModuleUnload");
  resolve(library, d.cuModuleGetFunction, "cuModuleGetFunction");
  resolve(library, d.cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(library, d.cuFuncGetAttribute, "cuFuncGetAttribute");
  d.cuTensorMapEncodeTiled =
      reinterpret_cast<decltype(d.cuTensorMapEncodeTiled)>(
          dlsym(library, "cuTensorMapEncodeTiled"));
  resolve(library, d.cuLaunchKernel, "cuLaunchKernel");
  d.cuLaunchKernelEx = reinterpret_cast<decltype(d.cuLaunchKernelEx)>(
      dlsym(library, "cuLaunchKernelEx"));
  resolve(library, d.cuMemAlloc, "cuMemAlloc_v2");
  resolve(library, d.cuMemFree, "cuMemFree_v2");
  resolve(library, d.cuMemsetD8Async, "cuMemsetD8Async");
  resolve(library, d.cuMemsetD32Async, "cuMemsetD32Async");
  resolve(library, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(library, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(library, d.cuStreamSynchronize, "cuStreamSynchronize");
  resolve(library, d.cuPointerGetAttribute, "cuPointerGetAttribute");
  resolve(library, d.cuGetErrorName, "cuGetErrorName");
  resolve(library, d.cuGetErrorString, "cuGetErrorString");
  resolve(library, d.cuStreamCreate, "cuStreamCreate");
  resolve(library, d.cuStreamDestroy, "cuStreamDestroy_v2");
  resolve(library, d.cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(library, d.cuStreamEndCapture, "cuStreamEndCapture");
  resolve(library, d.cuGraphInstantiate, "cuGraphInstantiateWithFlags");
  resolve(library, d.cuGraphLaunch, "cuGraphLaunch");
  resolve(library, d.cuGraphExecDestroy, "cuGraphExecDestroy");
  resolve(library, d.cuGraphDestroy, "cuGraphDestroy");
  CUresult status = d.cuInit(0);
  if (status != CUDA_SUCCESS) {
    const char *name = "?";
    d.cuGetErrorName(status, &name);
    throw CudaError(std::string("cuInit failed: ") + name +
                    " (is a GPU visible to this process?)");
  }
  return d;
}
} // namespace

const Driver &driver() {
  static std::once_flag once;
  static Driver instance;
  static std::string failure;
  std::call_once(once, [] {
    try {
      instance = load();
    } catch (const CudaError &e) {
      failure = e.what();
    }
  });
  if (!failure.empty())
    throw CudaError(failure);
  return instance;
}

void fail(CUresult result, const std::string &what) {
  const Driver &d = driver();
  const char *name = "unknown error", *description = "";
  d.cuGetErrorName(result, &name);
  d.cuGetErrorString(result, &description);
  throw CudaError(what + " failed: " + name + ": " + description);
}

} // namespace cuda
} // namespace kge_runtime
