//===- Runtime.cpp - loading and launching kernel bundles -----------------===//

#include "kge/runtime/Runtime.h"

#include "DeviceLibrary.h"
#include "kge/runtime/Cuda.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

namespace kge_runtime {

using namespace cuda;

int deviceCount() {
  try {
    int count = 0;
    check(driver().cuDeviceGetCount(&count), "cuDeviceGetCount");
    return count;
  } catch (const CudaError &) {
    return 0;
  }
}

namespace {

/// Makes the primary context of `device` current on this thread. The
/// context of each device is retained once per process.
CUcontext useDevice(int device) {
  static std::mutex mutex;
  static std::map<int, CUcontext> contexts;
  const Driver &d = driver();
  CUcontext context = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = contexts.find(device);
    if (it != contexts.end()) {
      context = it->second;
    } else {
      int count = 0;
      check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
      if (device < 0 || device >= count)
        throw CudaError("CUDA device " + std::to_string(device) +
                        " does not exist (" + std::to_string(count) +
                        " devices)");
      CUdevice handle;
      check(d.cuDeviceGet(&handle, device), "cuDeviceGet");
      check(d.cuDevicePrimaryCtxRetain(&context, handle),
            "cuDevicePrimaryCtxRetain");
      contexts[device] = context;
    }
  }
  CUcontext current = nullptr;
  check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != context)
    check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  return context;
}

int deviceAttribute(int device, int attribute) {
  CUdevice handle;
  check(driver().cuDeviceGet(&handle, device), "cuDeviceGet");
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, handle),
        "cuDeviceGetAttribute");
  return value;
}

/// Links one bundle module with the device library into a loaded module.
CUmodule linkModule(const ModuleImage &image, const std::string &chip,
                    int computeCapability) {
  const Driver &d = driver();
  char log[8192] = {0};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
  CUlinkState link;
  check(d.cuLinkCreate(2, options, values, &link), "cuLinkCreate");
  auto fail = [&](CUresult result, const std::string &what) {
    std::string message = what;
    if (log[0])
      message += " (" + std::string(log) + ")";
    d.cuLinkDestroy(link);
    check(result, message);
  };
  std::string ownChip = "sm_" + std::to_string(computeCapability);
  // An architecture-specific object (sm_90a) runs on that architecture
  // only, which is this device's.
  bool useObject = !image.cubin.empty() &&
                   (chip == ownChip || chip == ownChip + "a");
  CUresult r;
  if (useObject)
    r = d.cuLinkAddData(link, CU_JIT_INPUT_CUBIN,
                        const_cast<char *>(image.cubin.data()),
                        image.cubin.size(), image.name.c_str(), 0, nullptr,
                        nullptr);
  else
    r = d.cuLinkAddData(link, CU_JIT_INPUT_PTX,
                        const_cast<char *>(image.ptx.c_str()),
                        image.ptx.size() + 1, image.name.c_str(), 0, nullptr,
                        nullptr);
  if (r != CUDA_SUCCESS)
    fail(r, "linking module '" + image.name + "'");
  if (!device_library::available())
    throw BundleError("this runtime was built without the device library "
                      "(nvcc was not found at build time)");
  bool libraryObject = device_library::objectChip() == ownChip;
  if (libraryObject)
    r = d.cuLinkAddData(link, CU_JIT_INPUT_CUBIN,
                        const_cast<unsigned char *>(device_library::object()),
                        device_library::objectSize(), "kge_device", 0,
                        nullptr, nullptr);
  else
    r = d.cuLinkAddData(link, CU_JIT_INPUT_PTX,
                        const_cast<char *>(device_library::ptx()),
                        std::strlen(device_library::ptx()) + 1, "kge_device",
                        0, nullptr, nullptr);
  if (r != CUDA_SUCCESS)
    fail(r, "linking the device library into module '" + image.name + "'");
  void *cubin = nullptr;
  size_t size = 0;
  r = d.cuLinkComplete(link, &cubin, &size);
  if (r != CUDA_SUCCESS)
    fail(r, "completing the link of module '" + image.name + "'");
  CUmodule module;
  r = d.cuModuleLoadData(&module, cubin);
  d.cuLinkDestroy(link);
  check(r, "loading module '" + image.name + "'");
  return module;
}

size_t elementCount(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

} // namespace

struct Program::Impl {
  std::vector<CUmodule> modules;
  /// The function of each kernel launch step (null for memsets).
  std::vector<CUfunction> functions;
  /// Dynamic shared memory each function is configured for.
  std::vector<int> configuredShared;
  /// Static shared memory of each launch step's kernel.
  std::vector<int> staticShared;
  int maxSharedOptin = 0;
  /// Launch steps marked dependent with programmatic stream serialization:
  /// on sm_90 and newer, with a driver that has cuLaunchKernelEx, unless
  /// KGE_DEPENDENT_LAUNCH=0 when the program is loaded.
  bool dependentLaunch = false;
  CUfunction checkKernel = nullptr;
  /// Scratch buffers per stream: one call on a stream at a time uses them.
  struct StreamScratch {
    std::mutex mutex;
    std::map<std::string, std::pair<CUdeviceptr, size_t>> buffers;
    std::pair<CUdeviceptr, size_t> checkBuffer{0, 0};
  };
  std::mutex streamsMutex, configureMutex;
  std::map<uint64_t, std::unique_ptr<StreamScratch>> streams;

  StreamScratch &scratchFor(uint64_t stream) {
    std::lock_guard<std::mutex> lock(streamsMutex);
    auto &entry = streams[stream];
    if (!entry)
      entry = std::make_unique<StreamScratch>();
    return *entry;
  }
};

Program::Program(Manifest manifest, int device)
    : manifest_(std::move(manifest)), device_(device),
      impl_(std::make_unique<Impl>()) {}

Program::~Program() {
  try {
    const Driver &d = driver();
    useDevice(device_);
    for (auto &[stream, scratch] : impl_->streams) {
      for (auto &[name, buffer] : scratch->buffers)
        d.cuMemFree(buffer.first);
      if (scratch->checkBuffer.first)
        d.cuMemFree(scratch->checkBuffer.first);
    }
    for (CUmodule module : impl_->modules)
      d.cuModuleUnload(module);
  } catch (...) {
    // Destructors never throw; the driver reclaims everything at exit.
  }
}

std::shared_ptr<Program> Program::load(const std::string &bundleText,
                                       int device) {
  static std::mutex cacheMutex;
  static std::map<std::pair<size_t, int>,
                  std::vector<std::pair<std::string, std::shared_ptr<Program>>>>
      cache;
  size_t hash = std::hash<std::string>()(bundleText);
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    for (auto &[text, program] : cache[{hash, device}])
      if (text == bundleText)
        return program;
  }

  Manifest manifest = Manifest::parse(bundleText);
  useDevice(device);
  int major = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  int minor = deviceAttribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  std::shared_ptr<Program> program(new Program(std::move(manifest), device));
  Impl &impl = *program->impl_;
  impl.maxSharedOptin = deviceAttribute(
      device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  const char *dependentSetting = std::getenv("KGE_DEPENDENT_LAUNCH");
  impl.dependentLaunch =
      major >= 9 && driver().cuLaunchKernelEx &&
      !(dependentSetting && std::string(dependentSetting) == "0");
  const Manifest &m = program->manifest_;
  std::map<std::string, CUmodule> byName;
  for (const ModuleImage &image : m.modules) {
    CUmodule module = linkModule(image, m.chip, major * 10 + minor);
    impl.modules.push_back(module);
    byName[image.name] = module;
  }
  for (const LaunchStep &step : m.launches) {
    CUfunction function = nullptr;
    if (step.kind == LaunchStep::Kind::Kernel) {
      CUmodule module = step.module == "library" ? impl.modules.front()
                                                 : byName.at(step.module);
      CUresult r =
          driver().cuModuleGetFunction(&function, module, step.function.c_str());
      if (r != CUDA_SUCCESS)
        throw BundleError("module '" + step.module + "' has no kernel '" +
                          step.function + "'");
    }
    // Dynamic shared memory up to 48 KiB with the static included runs
    // without opting in.
    int staticShared = 0;
    if (function)
      check(driver().cuFuncGetAttribute(&staticShared,
                                        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                        function),
            "reading the shared memory of '" + step.function + "'");
    impl.functions.push_back(function);
    impl.staticShared.push_back(staticShared);
    impl.configuredShared.push_back(48 * 1024 - staticShared);
  }
  check(driver().cuModuleGetFunction(&impl.checkKernel, impl.modules.front(),
                                     "kge_check_indices"),
        "finding kge_check_indices");

  std::lock_guard<std::mutex> lock(cacheMutex);
  auto &entries = cache[{hash, device}];
  for (auto &[text, existing] : entries)
    if (text == bundleText)
      return existing; // Another thread loaded it meanwhile.
  entries.push_back({bundleText, program});
  return program;
}

static std::vector<ArrayDesc> describe(const std::vector<DeviceArray> &arrays) {
  std::vector<ArrayDesc> descs;
  for (const DeviceArray &a : arrays)
    descs.push_back({a.dtype, a.shape});
  return descs;
}

Bindings Program::bind(const std::vector<DeviceArray> &arguments,
                       std::optional<int64_t> batchSize) const {
  Bindings bindings;
  std::string error;
  if (!bindArguments(manifest_.signature, describe(arguments), batchSize,
                     bindings, error))
    throw ArgumentError(error);
  return bindings;
}

std::vector<std::vector<int64_t>>
Program::resultShapes(const Bindings &bindings) const {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = manifest_.signature.numArguments();
       i < manifest_.signature.params.size(); ++i)
    shapes.push_back(bindings.shapeOf(manifest_.signature.params[i]));
  return shapes;
}

/// Checks device, contiguity and alignment of every array.
static void checkPlacement(const Signature &signature,
                           const std::vector<DeviceArray> &arrays,
                           size_t firstParam, int device) {
  const Driver &d = driver();
  for (size_t i = 0; i < arrays.size(); ++i) {
    const DeviceArray &a = arrays[i];
    const Parameter &p = signature.params[firstParam + i];
    auto what = [&] { return p.describe(); };
    int ordinal = a.device;
    size_t elements = elementCount(a.shape);
    if (elements == 0)
      continue;
    if (ordinal == -2)
      throw ArgumentError(what() + " is in host memory; the bundle runs on "
                                 "CUDA device " +
                          std::to_string(device));
    if (ordinal == -1) {
      unsigned type = 0;
      if (d.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  a.data) != CUDA_SUCCESS ||
          (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED))
        throw ArgumentError(what() + " is not in CUDA device memory");
      if (d.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                  a.data) != CUDA_SUCCESS)
        throw ArgumentError(what() + " has no CUDA device");
    }
    if (ordinal != device)
      throw ArgumentError(what() + " is on CUDA device " +
                          std::to_string(ordinal) + "; the bundle runs on " +
                          std::to_string(device));
    if (!a.strides.empty()) {
      int64_t expected = 1;
      for (int dim = static_cast<int>(a.shape.size()) - 1; dim >= 0; --dim) {
        if (a.shape[dim] != 1 && a.strides[dim] != expected)
          throw ArgumentError(what() + " must be contiguous (row-major)");
        expected *= a.shape[dim];
      }
    }
    // Kernels load floats 16 bytes at a time; indices one at a time.
    size_t alignment = p.role == ParamRole::Indices ? dtypeSize(p.dtype) : 16;
    if (a.data % alignment != 0)
      throw ArgumentError(what() + " must be " + std::to_string(alignment) +
                          "-byte aligned");
  }
}

void Program::call(const std::vector<DeviceArray> &arguments,
                   const std::vector<DeviceArray> &results,
                   const CallOptions &options) {
  call(bind(arguments, options.batchSize), arguments, results, options);
}

void Program::call(const Bindings &bindings,
                   const std::vector<DeviceArray> &arguments,
                   const std::vector<DeviceArray> &results,
                   const CallOptions &options) {
  Impl::StreamScratch &scratch = impl_->scratchFor(options.stream);
  std::lock_guard<std::mutex> lock(scratch.mutex);
  launch(bindings, arguments, results, options, &scratch, options.stream,
         /*mayDepend=*/true);
}

void Program::launch(const Bindings &bindings,
                     const std::vector<DeviceArray> &arguments,
                     const std::vector<DeviceArray> &results,
                     const CallOptions &options, void *scratchState,
                     uint64_t streamHandle, bool mayDepend) {
  const Signature &signature = manifest_.signature;
  std::string error;
  if (arguments.size() != signature.numArguments())
    throw ArgumentError("'" + signature.name + "' takes " +
                        std::to_string(signature.numArguments()) +
                        " arguments, got " + std::to_string(arguments.size()));
  if (!checkResults(signature, bindings, describe(results), error))
    throw ArgumentError(error);
  useDevice(device_);
  checkPlacement(signature, arguments, 0, device_);
  checkPlacement(signature, results, signature.numArguments(), device_);

  const Driver &d = driver();
  CUstream stream = reinterpret_cast<CUstream>(streamHandle);
  auto evaluate = [&](const ExpressionPtr &e) {
    int64_t value;
    std::string message;
    if (!e->evaluate(bindings, value, message))
      throw ArgumentError(message);
    return value;
  };
  auto paramData = [&](int index) -> CUdeviceptr {
    unsigned numArgs = signature.numArguments();
    return index < static_cast<int>(numArgs)
               ? arguments[index].data
               : results[index - numArgs].data;
  };

  Impl::StreamScratch &scratch =
      *static_cast<Impl::StreamScratch *>(scratchState);
  auto ensure = [&](std::pair<CUdeviceptr, size_t> &buffer, size_t bytes) {
    bytes = std::max<size_t>(bytes, 16);
    if (buffer.second >= bytes)
      return;
    if (buffer.first) {
      // The previous call on this stream may still use it.
      check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
      check(d.cuMemFree(buffer.first), "cuMemFree");
    }
    buffer = {0, 0};
    check(d.cuMemAlloc(&buffer.first, bytes), "cuMemAlloc (scratch)");
    buffer.second = bytes;
  };
  std::map<std::string, CUdeviceptr> scratchPointers;
  for (const ScratchBuffer &s : manifest_.scratch) {
    int64_t count = evaluate(s.count);
    if (count < 0)
      throw ArgumentError("scratch buffer '" + s.name + "' has negative size");
    auto &buffer = scratch.buffers[s.name];
    ensure(buffer, static_cast<size_t>(count) * dtypeSize(s.dtype));
    scratchPointers[s.name] = buffer.first;
  }
  auto bufferData = [&](const BufferRef &ref) -> CUdeviceptr {
    return ref.kind == BufferRef::Kind::Param ? paramData(ref.index)
                                              : scratchPointers.at(ref.name);
  };

  // Checked mode: every index against its tables, on the GPU. All checks
  // run before one synchronization; each writes the first bad position of
  // its array into its own slot (a slot filled with 0x7f bytes: none).
  if (options.checked && !manifest_.checks.empty()) {
    size_t numChecks = manifest_.checks.size();
    ensure(scratch.checkBuffer, numChecks * sizeof(int64_t));
    CUdeviceptr slots = scratch.checkBuffer.first;
    check(d.cuMemsetD8Async(slots, 0x7f, numChecks * sizeof(int64_t), stream),
          "cuMemsetD8Async (index check)");
    std::vector<int64_t> counts(numChecks), bounds(numChecks);
    for (size_t i = 0; i < numChecks; ++i) {
      const IndexCheck &c = manifest_.checks[i];
      const Parameter &p = signature.params[c.param];
      counts[i] = evaluate(c.count);
      bounds[i] = evaluate(c.bound);
      if (counts[i] == 0)
        continue;
      CUdeviceptr firstBad = slots + i * sizeof(int64_t);
      CUdeviceptr keys = paramData(c.param);
      int bits = p.dtype == DType::I32 ? 32 : 64;
      void *params[] = {&keys, &bits, &counts[i], &bounds[i], &firstBad};
      unsigned grid = static_cast<unsigned>(
          std::min<int64_t>((counts[i] + 255) / 256, 65535));
      check(d.cuLaunchKernel(impl_->checkKernel, grid, 1, 1, 256, 1, 1, 0,
                             stream, params, nullptr),
            [&] { return "launching the index check of '" + p.name + "'"; });
    }
    std::vector<int64_t> firstBad(numChecks);
    check(d.cuMemcpyDtoHAsync(firstBad.data(), slots,
                              numChecks * sizeof(int64_t), stream),
          "cuMemcpyDtoHAsync (index check)");
    check(d.cuStreamSynchronize(stream), "the index checks");
    for (size_t i = 0; i < numChecks; ++i) {
      if (counts[i] == 0 || firstBad[i] >= counts[i])
        continue;
      const Parameter &p = signature.params[manifest_.checks[i].param];
      int64_t bad = firstBad[i], value = 0;
      size_t size = dtypeSize(p.dtype);
      check(d.cuMemcpyDtoHAsync(&value, paramData(manifest_.checks[i].param) +
                                            bad * size,
                                size, stream),
            "cuMemcpyDtoHAsync (index check)");
      check(d.cuStreamSynchronize(stream), "reading a bad index");
      if (size == 4)
        value = static_cast<int32_t>(value);
      std::string tables;
      for (unsigned t : p.indexedTables)
        tables += (tables.empty() ? "'" : ", '") + signature.params[t].name +
                  "'";
      throw IndexRangeError("index " + std::to_string(value) +
                            " at position " + std::to_string(bad) + " of '" +
                            p.name + "' is out of range [0, " +
                            std::to_string(bounds[i]) + ") of table " +
                            tables);
    }
  }

  for (size_t s = 0; s < manifest_.launches.size(); ++s) {
    const LaunchStep &step = manifest_.launches[s];
    if (step.when && evaluate(step.when) <= 0)
      continue;
    if (step.kind == LaunchStep::Kind::Memset) {
      const ScratchBuffer &buffer = manifest_.scratch[step.buffer.index];
      size_t bytes =
          static_cast<size_t>(evaluate(buffer.count)) * dtypeSize(buffer.dtype);
      if (bytes)
        check(d.cuMemsetD8Async(scratchPointers.at(buffer.name), 0, bytes,
                                stream),
              "clearing scratch buffer '" + buffer.name + "'");
      continue;
    }
    int64_t grid[3], block[3];
    for (int i = 0; i < 3; ++i) {
      grid[i] = evaluate(step.grid[i]);
      block[i] = evaluate(step.block[i]);
    }
    if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
      continue; // Nothing to do (an empty batch).
    int64_t shared = evaluate(step.sharedBytes);
    if (grid[0] > 2147483647LL || grid[1] > 65535 || grid[2] > 65535 ||
        block[0] * block[1] * block[2] > 1024 || block[0] <= 0 ||
        block[1] <= 0 || block[2] <= 0)
      throw ArgumentError("kernel '" + step.function +
                          "' needs a launch the GPU cannot run (grid " +
                          std::to_string(grid[0]) + ", block " +
                          std::to_string(block[0]) + ")");
    if (shared + impl_->staticShared[s] > impl_->maxSharedOptin)
      throw ArgumentError("kernel '" + step.function + "' needs " +
                          std::to_string(shared + impl_->staticShared[s]) +
                          " bytes of shared memory for these sizes; the "
                          "device has " +
                          std::to_string(impl_->maxSharedOptin) +
                          " (use a smaller tile or embedding length)");
    CUfunction function = impl_->functions[s];
    if (shared > 48 * 1024 - impl_->staticShared[s]) {
      std::lock_guard<std::mutex> configure(impl_->configureMutex);
      if (impl_->configuredShared[s] < shared) {
        check(d.cuFuncSetAttribute(
                  function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(shared)),
              "configuring the shared memory of '" + step.function + "'");
        impl_->configuredShared[s] = static_cast<int>(shared);
      }
    }

    // Kernel parameters: memref descriptors expand to (allocated, aligned,
    // offset, sizes..., strides...).
    std::vector<uint64_t> words;
    std::vector<uint32_t> halves;
    words.reserve(64);
    halves.reserve(8);
    // Where each parameter's value lives: a 64-bit word, a 32-bit half or a
    // tensor map, and its index there.
    enum class Slot { Word, Half, Map };
    std::vector<std::pair<Slot, size_t>> slots;
    // Tensor maps pass by value (128 bytes, 64-byte aligned).
    struct alignas(64) TensorMap {
      unsigned char bytes[128];
    };
    std::vector<TensorMap> maps;
    maps.reserve(step.args.size());
    for (const KernelArg &arg : step.args) {
      switch (arg.kind) {
      case KernelArg::Kind::Memref: {
        CUdeviceptr data = bufferData(arg.buffer);
        std::vector<int64_t> shape;
        for (const ExpressionPtr &e : arg.shape)
          shape.push_back(evaluate(e));
        std::vector<int64_t> strides(shape.size(), 1);
        for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
          strides[i] = strides[i + 1] * shape[i + 1];
        for (uint64_t w : {static_cast<uint64_t>(data),
                           static_cast<uint64_t>(data), uint64_t(0)}) {
          slots.push_back({Slot::Word, words.size()});
          words.push_back(w);
        }
        for (int64_t v : shape) {
          slots.push_back({Slot::Word, words.size()});
          words.push_back(static_cast<uint64_t>(v));
        }
        for (int64_t v : strides) {
          slots.push_back({Slot::Word, words.size()});
          words.push_back(static_cast<uint64_t>(v));
        }
        break;
      }
      case KernelArg::Kind::Pointer:
        slots.push_back({Slot::Word, words.size()});
        words.push_back(bufferData(arg.buffer));
        break;
      case KernelArg::Kind::I64:
        slots.push_back({Slot::Word, words.size()});
        words.push_back(static_cast<uint64_t>(evaluate(arg.value)));
        break;
      case KernelArg::Kind::I32:
        slots.push_back({Slot::Half, halves.size()});
        halves.push_back(static_cast<uint32_t>(evaluate(arg.value)));
        break;
      case KernelArg::Kind::TensorMap: {
        const DeviceArray &array = arg.buffer.index < static_cast<int>(
                                                          signature.numArguments())
                                       ? arguments[arg.buffer.index]
                                       : results[arg.buffer.index -
                                                 signature.numArguments()];
        DType dtype = signature.params[arg.buffer.index].dtype;
        maps.emplace_back();
        std::memset(maps.back().bytes, 0, sizeof(TensorMap));
        uint64_t rows = static_cast<uint64_t>(array.shape.at(0));
        uint64_t cols = static_cast<uint64_t>(array.shape.at(1));
        // An empty array: no box is ever read (the kernel's loops do not
        // run), the map stays zero.
        if (rows && cols) {
          if (cols * dtypeSize(dtype) % 16 != 0 || rows > 0xFFFFFFFFu ||
              cols > 0xFFFFFFFFu)
            throw ArgumentError(
                "kernel '" + step.function + "' reads '" +
                signature.params[arg.buffer.index].name +
                "' through a tensor map: its rows must be multiples of 16 "
                "bytes and its extents below 2^32");
          if (!d.cuTensorMapEncodeTiled)
            throw CudaError("kernel '" + step.function +
                            "' needs tensor maps (CUDA 12 drivers)");
          uint64_t dims[2] = {cols, rows};
          uint64_t strides[1] = {cols * dtypeSize(dtype)};
          unsigned box[2] = {static_cast<unsigned>(arg.box[1]),
                             static_cast<unsigned>(arg.box[0])};
          unsigned unit[2] = {1, 1};
          // CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, _FLOAT32 = 7, _BFLOAT16 =
          // 9; no interleave, 128-byte swizzle (3), L2 promotion of 128
          // bytes (2), zero fill (0).
          int type = dtype == DType::F16 ? 6 : dtype == DType::BF16 ? 9 : 7;
          check(d.cuTensorMapEncodeTiled(
                    maps.back().bytes, type, 2,
                    reinterpret_cast<void *>(paramData(arg.buffer.index)),
                    dims, strides, box, unit, 0, 3, 2, 0),
                "encoding the tensor map of '" +
                    signature.params[arg.buffer.index].name + "'");
        }
        slots.push_back({Slot::Map, maps.size() - 1});
        break;
      }
      }
    }
    std::vector<void *> params;
    for (auto [slot, index] : slots)
      params.push_back(slot == Slot::Map    ? static_cast<void *>(maps[index].bytes)
                       : slot == Slot::Half ? static_cast<void *>(&halves[index])
                                            : static_cast<void *>(&words[index]));
    CUlaunchConfig config = {};
    config.gridDimX = static_cast<unsigned>(grid[0]);
    config.gridDimY = static_cast<unsigned>(grid[1]);
    config.gridDimZ = static_cast<unsigned>(grid[2]);
    config.blockDimX = static_cast<unsigned>(block[0]);
    config.blockDimY = static_cast<unsigned>(block[1]);
    config.blockDimZ = static_cast<unsigned>(block[2]);
    config.sharedMemBytes = static_cast<unsigned>(shared);
    config.hStream = stream;
    CUresult launched;
    if (step.dependent && impl_->dependentLaunch && mayDepend) {
      // The kernel waits for the previous work itself: it may start (its
      // blocks resident, waiting) while the previous kernel finishes.
      CUlaunchAttribute attribute = {};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      launched = d.cuLaunchKernelEx(&config, function, params.data(), nullptr);
    } else {
      launched = d.cuLaunchKernel(
          function, config.gridDimX, config.gridDimY, config.gridDimZ,
          config.blockDimX, config.blockDimY, config.blockDimZ,
          config.sharedMemBytes, stream, params.data(), nullptr);
    }
    check(launched, [&] {
      return "launching kernel '" + step.function + "' of bundle '" +
             signature.name + "'";
    });
  }
}

//===----------------------------------------------------------------------===//
// Captured calls
//===----------------------------------------------------------------------===//

/// What a captured call owns on the device: released when the call is
/// destroyed, or when its construction fails halfway.
struct CapturedCall::State {
  int device = 0;
  Program::Impl::StreamScratch scratch;
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;

  ~State() {
    try {
      const Driver &d = driver();
      useDevice(device);
      if (stream)
        d.cuStreamSynchronize(stream);
      if (exec)
        d.cuGraphExecDestroy(exec);
      if (graph)
        d.cuGraphDestroy(graph);
      if (stream)
        d.cuStreamDestroy(stream);
      // Replays on other streams may still run: free the scratch buffers
      // once the device is idle.
      d.cuCtxSynchronize();
      for (auto &[name, buffer] : scratch.buffers)
        d.cuMemFree(buffer.first);
    } catch (...) {
      // Destructors never throw; the driver reclaims everything at exit.
    }
  }
};

CapturedCall::CapturedCall(std::shared_ptr<Program> program,
                           const std::vector<DeviceArray> &arguments,
                           const std::vector<DeviceArray> &results,
                           const CallOptions &options)
    : program_(std::move(program)), state_(std::make_unique<State>()) {
  if (options.checked)
    throw ArgumentError("a checked call synchronizes to read the index "
                        "checks and cannot be captured; check the indices "
                        "with a checked call first");
  const Driver &d = driver();
  Bindings bindings = program_->bind(arguments, options.batchSize);
  state_->device = program_->device();
  useDevice(state_->device);
  check(d.cuStreamCreate(&state_->stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  uint64_t stream = reinterpret_cast<uint64_t>(state_->stream);
  // The first run allocates the scratch buffers and configures shared
  // memory: neither may happen while capturing. Then the plan is captured
  // in order (no programmatic dependences inside the graph).
  program_->launch(bindings, arguments, results, options, &state_->scratch,
                   stream, /*mayDepend=*/false);
  check(d.cuStreamSynchronize(state_->stream), "the call before the capture");
  check(d.cuStreamBeginCapture(state_->stream,
                               CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  try {
    program_->launch(bindings, arguments, results, options, &state_->scratch,
                     stream, /*mayDepend=*/false);
  } catch (...) {
    CUgraph discarded = nullptr;
    d.cuStreamEndCapture(state_->stream, &discarded);
    if (discarded)
      d.cuGraphDestroy(discarded);
    throw;
  }
  check(d.cuStreamEndCapture(state_->stream, &state_->graph),
        "cuStreamEndCapture");
  check(d.cuGraphInstantiate(&state_->exec, state_->graph, 0),
        "cuGraphInstantiate");
}

CapturedCall::~CapturedCall() = default;

void CapturedCall::replay(uint64_t stream) {
  const Driver &d = driver();
  useDevice(program_->device());
  check(d.cuGraphLaunch(state_->exec, reinterpret_cast<CUstream>(stream)),
        [&] {
          return "replaying the captured call of '" +
                 program_->manifest().signature.name + "'";
        });
}

} // namespace kge_runtime
