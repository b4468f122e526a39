//===- Runtime.cpp - loading and launching kernel bundles -----------------===//

#include "kge/runtime/Runtime.h"

#include "DeviceLibrary.h"
#include "Internal.h"
#include "kge/runtime/Cuda.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

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

namespace {

int deviceAttribute(int device, int attribute) {
  CUdevice handle;
  check(driver().cuDeviceGet(&handle, device), "cuDeviceGet");
  int value = 0;
  check(driver().cuDeviceGetAttribute(&value, attribute, handle),
        "cuDeviceGetAttribute");
  return value;
}

/// A JIT link with its error log.
struct Link {
  char log[8192] = {0};
  CUlinkState state = nullptr;

  Link() {
    int options[] = {CU_JIT_ERROR_LOG_BUFFER,
                     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(sizeof(log))};
    check(driver().cuLinkCreate(2, options, values, &state), "cuLinkCreate");
  }
  ~Link() {
    if (state)
      driver().cuLinkDestroy(state);
  }
  Link(const Link &) = delete;
  Link &operator=(const Link &) = delete;
  /// Throws CudaError for a failed step, with the linker's log.
  void check(CUresult result, const std::string &what) {
    if (result == CUDA_SUCCESS)
      return;
    cuda::check(result, log[0] ? what + " (" + log + ")" : what);
  }
  /// Adds the device library, completes the link and loads the module
  /// (`name` for messages).
  CUmodule finishWithLibrary(const std::string &ownChip,
                             const std::string &name) {
    const Driver &d = driver();
    if (!device_library::available())
      throw BundleError("this runtime was built without the device library "
                        "(nvcc was not found at build time)");
    if (device_library::objectChip() == ownChip)
      check(d.cuLinkAddData(
                state, CU_JIT_INPUT_CUBIN,
                const_cast<unsigned char *>(device_library::object()),
                device_library::objectSize(), "kge_device", 0, nullptr,
                nullptr),
            "linking the device library into module '" + name + "'");
    else
      check(d.cuLinkAddData(state, CU_JIT_INPUT_PTX,
                            const_cast<char *>(device_library::ptx()),
                            std::strlen(device_library::ptx()) + 1,
                            "kge_device", 0, nullptr, nullptr),
            "linking the device library into module '" + name + "'");
    void *cubin = nullptr;
    size_t size = 0;
    check(d.cuLinkComplete(state, &cubin, &size),
          "completing the link of module '" + name + "'");
    CUmodule module;
    cuda::check(d.cuModuleLoadData(&module, cubin),
                "loading module '" + name + "'");
    return module;
  }
};

std::string chipOf(int computeCapability) {
  return "sm_" + std::to_string(computeCapability);
}

/// Links one bundle module with the device library into a loaded module.
CUmodule linkModule(const ModuleImage &image, const std::string &chip,
                    int computeCapability) {
  Link link;
  std::string ownChip = chipOf(computeCapability);
  // An architecture-specific object (sm_90a) runs on that architecture
  // only, which is this device's.
  bool useObject = !image.cubin.empty() &&
                   (chip == ownChip || chip == ownChip + "a");
  if (useObject)
    link.check(driver().cuLinkAddData(
                   link.state, CU_JIT_INPUT_CUBIN,
                   const_cast<char *>(image.cubin.data()), image.cubin.size(),
                   image.name.c_str(), 0, nullptr, nullptr),
               "linking module '" + image.name + "'");
  else
    link.check(driver().cuLinkAddData(
                   link.state, CU_JIT_INPUT_PTX,
                   const_cast<char *>(image.ptx.c_str()),
                   image.ptx.size() + 1, image.name.c_str(), 0, nullptr,
                   nullptr),
               "linking module '" + image.name + "'");
  return link.finishWithLibrary(ownChip, image.name);
}

} // namespace

CUfunction libraryKernel(int device, const char *name) {
  static std::mutex mutex;
  static std::map<int, CUmodule> modules;
  static std::map<std::pair<int, std::string>, CUfunction> kernels;
  useDevice(device);
  std::lock_guard<std::mutex> lock(mutex);
  auto known = kernels.find({device, name});
  if (known != kernels.end())
    return known->second;
  CUmodule &module = modules[device];
  if (!module) {
    int cc = deviceAttribute(device,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) *
                 10 +
             deviceAttribute(device,
                             CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    module = Link().finishWithLibrary(chipOf(cc), "kge_device");
  }
  CUfunction function = nullptr;
  check(driver().cuModuleGetFunction(&function, module, name),
        std::string("finding ") + name + " in the device library");
  kernels[{device, name}] = function;
  return function;
}

namespace {

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
    /// By the index of the manifest's scratch buffer.
    std::vector<std::pair<CUdeviceptr, size_t>> buffers;
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

  /// Launch plans by the key of their arguments' shapes (planKey). Bounded:
  /// a program called with ever new shapes starts over at kMaxPlans.
  static constexpr size_t kMaxPlans = 256;
  struct KeyHash {
    size_t operator()(const std::vector<int64_t> &key) const {
      size_t h = key.size();
      for (int64_t v : key)
        h = h * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(v);
      return h;
    }
  };
  mutable std::mutex plansMutex;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const LaunchPlan>,
                     KeyHash>
      plans;
};

Program::Program(Manifest manifest, int device)
    : manifest_(std::move(manifest)), device_(device),
      impl_(std::make_unique<Impl>()) {}

Program::~Program() {
  try {
    const Driver &d = driver();
    useDevice(device_);
    for (auto &[stream, scratch] : impl_->streams) {
      for (auto &buffer : scratch->buffers)
        if (buffer.first)
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

/// Checks device, contiguity and alignment of every array.
static void checkPlacement(const Signature &signature,
                           const std::vector<DeviceArray> &arrays,
                           size_t firstParam, int device) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    const DeviceArray &a = arrays[i];
    const Parameter &p = signature.params[firstParam + i];
    auto what = [&] { return p.describe(); };
    size_t elements = elementCount(a.shape);
    if (elements == 0)
      continue;
    int ordinal = deviceOf(a, what);
    if (ordinal == -2)
      throw ArgumentError(what() + " is in host memory; the bundle runs on "
                                 "CUDA device " +
                          std::to_string(device));
    if (ordinal != device)
      throw ArgumentError(what() + " is on CUDA device " +
                          std::to_string(ordinal) + "; the bundle runs on " +
                          std::to_string(device));
    checkContiguous(a, what);
    // Kernels load floats 16 bytes at a time; indices one at a time.
    size_t alignment = p.role == ParamRole::Indices ? dtypeSize(p.dtype) : 16;
    if (a.data % alignment != 0)
      throw ArgumentError(what() + " must be " + std::to_string(alignment) +
                          "-byte aligned");
  }
}

//===----------------------------------------------------------------------===//
// Launch plans
//===----------------------------------------------------------------------===//

/// The steps of a launch plan: what each launch needs beyond the addresses
/// of the call's arrays and scratch buffers.
struct LaunchPlan::Steps {
  /// The program whose manifest the steps index, and the key of the
  /// argument shapes they were evaluated for (planKey).
  const Program *owner = nullptr;
  std::vector<int64_t> key;
  /// Bytes of each of the manifest's scratch buffers.
  std::vector<size_t> scratchBytes;
  /// The index checks' counts and bounds (checked mode), or the message of
  /// the first one that could not be evaluated.
  std::vector<int64_t> checkCounts, checkBounds;
  std::string checkError;

  /// Where a kernel parameter's value lives: a 64-bit word, a 32-bit half
  /// or a tensor map, and its index there.
  enum class Slot { Word, Half, Map };
  /// A word that holds the address of an array or scratch buffer.
  struct Address {
    size_t word;
    BufferRef::Kind kind;
    int index;
  };
  /// A tensor map of a 2-D parameter, encoded per call (it holds the
  /// address).
  struct Map {
    BufferRef::Kind kind;
    int index;
    std::string name;
    DType dtype;
    uint64_t rows, cols;
    unsigned box[2];
  };
  struct Step {
    LaunchStep::Kind kind = LaunchStep::Kind::Kernel;
    /// Memset: the buffer (scratch or a result) and its bytes.
    int buffer = -1;
    BufferRef::Kind bufferKind = BufferRef::Kind::Scratch;
    size_t bytes = 0;
    /// Kernel.
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
    bool dependent = false;
    std::vector<uint64_t> words;
    std::vector<uint32_t> halves;
    std::vector<std::pair<Slot, size_t>> slots;
    std::vector<Address> addresses;
    std::vector<Map> maps;
    const LaunchStep *source = nullptr;
  };
  /// The steps that run for these sizes (`when` and empty grids applied).
  std::vector<Step> steps;
};

/// The key of a plan: everything bind() reads from the arguments.
static std::vector<int64_t> planKey(const std::vector<DeviceArray> &arguments,
                                    std::optional<int64_t> batchSize) {
  std::vector<int64_t> key;
  key.reserve(1 + 4 * arguments.size());
  // A batch size is never negative (plan() refuses one before the lookup).
  key.push_back(batchSize ? *batchSize : -1);
  for (const DeviceArray &a : arguments) {
    key.push_back(static_cast<int64_t>(a.dtype));
    key.push_back(static_cast<int64_t>(a.shape.size()));
    key.insert(key.end(), a.shape.begin(), a.shape.end());
  }
  return key;
}

std::shared_ptr<const LaunchPlan>
Program::plan(const std::vector<DeviceArray> &arguments,
              std::optional<int64_t> batchSize) {
  const Signature &signature = manifest_.signature;
  if (arguments.size() != signature.numArguments())
    throw ArgumentError("'" + signature.name + "' takes " +
                        std::to_string(signature.numArguments()) +
                        " arguments, got " + std::to_string(arguments.size()));
  if (batchSize && *batchSize < 0)
    throw ArgumentError("batch size must not be negative, got " +
                        std::to_string(*batchSize));
  std::vector<int64_t> key = planKey(arguments, batchSize);
  {
    std::lock_guard<std::mutex> lock(impl_->plansMutex);
    auto it = impl_->plans.find(key);
    if (it != impl_->plans.end())
      return it->second;
  }
  std::shared_ptr<const LaunchPlan> built =
      buildPlan(bind(arguments, batchSize), key);
  std::lock_guard<std::mutex> lock(impl_->plansMutex);
  if (impl_->plans.size() >= Impl::kMaxPlans)
    impl_->plans.clear();
  return impl_->plans.emplace(std::move(key), built).first->second;
}

size_t Program::numPlans() const {
  std::lock_guard<std::mutex> lock(impl_->plansMutex);
  return impl_->plans.size();
}

std::shared_ptr<const LaunchPlan>
Program::buildPlan(Bindings bindings, std::vector<int64_t> key) {
  using Steps = LaunchPlan::Steps;
  const Signature &signature = manifest_.signature;
  auto plan = std::make_shared<LaunchPlan>();
  auto steps = std::make_shared<Steps>();
  steps->owner = this;
  steps->key = std::move(key);
  plan->bindings = std::move(bindings);
  const Bindings &b = plan->bindings;
  for (size_t i = signature.numArguments(); i < signature.params.size(); ++i)
    plan->resultShapes.push_back(b.shapeOf(signature.params[i]));
  auto evaluate = [&](const ExpressionPtr &e) {
    int64_t value;
    std::string message;
    if (!e->evaluate(b, value, message))
      throw ArgumentError(message);
    return value;
  };

  for (const ScratchBuffer &s : manifest_.scratch) {
    int64_t count = evaluate(s.count);
    if (count < 0)
      throw ArgumentError("scratch buffer '" + s.name + "' has negative size");
    steps->scratchBytes.push_back(static_cast<size_t>(count) *
                                  dtypeSize(s.dtype));
  }
  // A view of a scratch buffer (a memref or a tensor map) lies inside it.
  auto checkScratchView = [&](int index, const std::vector<int64_t> &shape,
                              const std::string &function) {
    const ScratchBuffer &s = manifest_.scratch[index];
    uint64_t capacity = steps->scratchBytes[index] / dtypeSize(s.dtype);
    uint64_t elements = 1;
    std::string text;
    for (int64_t d : shape) {
      text += (text.empty() ? "" : " x ") + std::to_string(d);
      if (d < 0 || (d && elements > capacity / static_cast<uint64_t>(d)))
        elements = capacity + 1;
      else
        elements *= static_cast<uint64_t>(d);
    }
    if (elements > capacity)
      throw ArgumentError("kernel '" + function + "' views scratch buffer '" +
                          s.name + "' as " + text +
                          " elements, more than its " +
                          std::to_string(capacity));
  };

  // Index checks run in checked mode only: a size they cannot evaluate is
  // an error of checked calls.
  for (const IndexCheck &c : manifest_.checks) {
    int64_t count = 0, bound = 0;
    std::string message;
    if (steps->checkError.empty() &&
        (!c.count->evaluate(b, count, message) ||
         !c.bound->evaluate(b, bound, message)))
      steps->checkError = message;
    steps->checkCounts.push_back(count);
    steps->checkBounds.push_back(bound);
  }

  const Driver &d = driver();
  for (size_t s = 0; s < manifest_.launches.size(); ++s) {
    const LaunchStep &launch = manifest_.launches[s];
    if (launch.when && evaluate(launch.when) <= 0)
      continue;
    Steps::Step step;
    step.kind = launch.kind;
    step.source = &launch;
    if (launch.kind == LaunchStep::Kind::Memset) {
      step.buffer = launch.buffer.index;
      step.bufferKind = launch.buffer.kind;
      if (launch.buffer.kind == BufferRef::Kind::Param) {
        // A result: its elements.
        const Parameter &p = signature.params[launch.buffer.index];
        size_t elements = 1;
        for (int64_t d : b.shapeOf(p))
          elements *= static_cast<size_t>(d);
        step.bytes = elements * dtypeSize(p.dtype);
      } else {
        step.bytes = steps->scratchBytes[launch.buffer.index];
      }
      if (step.bytes)
        steps->steps.push_back(std::move(step));
      continue;
    }
    int64_t grid[3], block[3];
    for (int i = 0; i < 3; ++i) {
      grid[i] = evaluate(launch.grid[i]);
      block[i] = evaluate(launch.block[i]);
    }
    if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0)
      continue; // Nothing to do (an empty batch).
    int64_t shared = evaluate(launch.sharedBytes);
    if (grid[0] > 2147483647LL || grid[1] > 65535 || grid[2] > 65535 ||
        block[0] * block[1] * block[2] > 1024 || block[0] <= 0 ||
        block[1] <= 0 || block[2] <= 0)
      throw ArgumentError(
          "kernel '" + launch.function +
          "' needs a launch the GPU cannot run (grid " +
          std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " x " +
          std::to_string(grid[2]) + ", block " + std::to_string(block[0]) +
          " x " + std::to_string(block[1]) + " x " + std::to_string(block[2]) +
          "; at most 2147483647 x 65535 x 65535 blocks of 1024 threads)");
    if (shared < 0 || shared + impl_->staticShared[s] > impl_->maxSharedOptin)
      throw ArgumentError("kernel '" + launch.function + "' needs " +
                          std::to_string(shared + impl_->staticShared[s]) +
                          " bytes of shared memory for these sizes; the "
                          "device has " +
                          std::to_string(impl_->maxSharedOptin) +
                          " (use a smaller tile or embedding length)");
    step.function = impl_->functions[s];
    if (shared > 48 * 1024 - impl_->staticShared[s]) {
      std::lock_guard<std::mutex> configure(impl_->configureMutex);
      if (impl_->configuredShared[s] < shared) {
        useDevice(device_);
        check(d.cuFuncSetAttribute(
                  step.function,
                  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  static_cast<int>(shared)),
              "configuring the shared memory of '" + launch.function + "'");
        impl_->configuredShared[s] = static_cast<int>(shared);
      }
    }
    for (int i = 0; i < 3; ++i) {
      step.grid[i] = static_cast<unsigned>(grid[i]);
      step.block[i] = static_cast<unsigned>(block[i]);
    }
    step.shared = static_cast<unsigned>(shared);
    step.dependent = launch.dependent;

    // Kernel parameters: memref descriptors expand to (allocated, aligned,
    // offset, sizes..., strides...).
    auto word = [&](uint64_t value) {
      step.slots.push_back({Steps::Slot::Word, step.words.size()});
      step.words.push_back(value);
    };
    auto address = [&](const BufferRef &ref) {
      step.addresses.push_back({step.words.size(), ref.kind, ref.index});
      word(0);
    };
    for (const KernelArg &arg : launch.args) {
      switch (arg.kind) {
      case KernelArg::Kind::Memref: {
        std::vector<int64_t> shape;
        for (const ExpressionPtr &e : arg.shape)
          shape.push_back(evaluate(e));
        if (arg.buffer.kind == BufferRef::Kind::Scratch)
          checkScratchView(arg.buffer.index, shape, launch.function);
        std::vector<int64_t> strides(shape.size(), 1);
        for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
          strides[i] = strides[i + 1] * shape[i + 1];
        address(arg.buffer);
        address(arg.buffer);
        word(0);
        for (int64_t v : shape)
          word(static_cast<uint64_t>(v));
        for (int64_t v : strides)
          word(static_cast<uint64_t>(v));
        break;
      }
      case KernelArg::Kind::Pointer:
        address(arg.buffer);
        break;
      case KernelArg::Kind::I64:
        word(static_cast<uint64_t>(evaluate(arg.value)));
        break;
      case KernelArg::Kind::I32:
        step.slots.push_back({Steps::Slot::Half, step.halves.size()});
        step.halves.push_back(static_cast<uint32_t>(evaluate(arg.value)));
        break;
      case KernelArg::Kind::TensorMap: {
        Steps::Map map;
        map.kind = arg.buffer.kind;
        map.index = arg.buffer.index;
        map.name = arg.buffer.name;
        std::vector<int64_t> shape;
        if (arg.buffer.kind == BufferRef::Kind::Param) {
          const Parameter &p = signature.params[arg.buffer.index];
          shape = b.shapeOf(p);
          map.dtype = p.dtype;
        } else {
          // A scratch buffer viewed as rows x cols.
          for (const ExpressionPtr &e : arg.shape)
            shape.push_back(evaluate(e));
          checkScratchView(arg.buffer.index, shape, launch.function);
          map.dtype = manifest_.scratch[arg.buffer.index].dtype;
        }
        map.rows = static_cast<uint64_t>(shape.at(0));
        map.cols = static_cast<uint64_t>(shape.at(1));
        map.box[0] = static_cast<unsigned>(arg.box[1]);
        map.box[1] = static_cast<unsigned>(arg.box[0]);
        // An empty array: no box is ever read (the kernel's loops do not
        // run), the map stays zero.
        if (map.rows && map.cols &&
            (map.cols * dtypeSize(map.dtype) % 16 != 0 ||
             map.rows > 0xFFFFFFFFu || map.cols > 0xFFFFFFFFu))
          throw ArgumentError(
              "kernel '" + launch.function + "' reads '" + map.name +
              "' through a tensor map: its rows must be multiples of 16 "
              "bytes and its extents below 2^32");
        if (map.rows && map.cols && !d.cuTensorMapEncodeTiled)
          throw CudaError("kernel '" + launch.function +
                          "' needs tensor maps (CUDA 12 drivers)");
        step.slots.push_back({Steps::Slot::Map, step.maps.size()});
        step.maps.push_back(map);
        break;
      }
      }
    }
    steps->steps.push_back(std::move(step));
  }
  plan->steps = std::move(steps);
  return plan;
}

void Program::call(const std::vector<DeviceArray> &arguments,
                   const std::vector<DeviceArray> &results,
                   const CallOptions &options) {
  call(*plan(arguments, options.batchSize), arguments, results, options);
}

void Program::call(const LaunchPlan &plan,
                   const std::vector<DeviceArray> &arguments,
                   const std::vector<DeviceArray> &results,
                   const CallOptions &options) {
  Impl::StreamScratch &scratch = impl_->scratchFor(options.stream);
  std::lock_guard<std::mutex> lock(scratch.mutex);
  launch(plan, arguments, results, options, &scratch, options.stream,
         /*mayDepend=*/true);
}

void Program::launch(const LaunchPlan &plan,
                     const std::vector<DeviceArray> &arguments,
                     const std::vector<DeviceArray> &results,
                     const CallOptions &options, void *scratchState,
                     uint64_t streamHandle, bool mayDepend) {
  using Steps = LaunchPlan::Steps;
  const Signature &signature = manifest_.signature;
  if (!plan.steps || plan.steps->owner != this)
    throw ArgumentError("'" + signature.name +
                        "' got a launch plan that Program::plan of this "
                        "program did not make");
  const Steps &steps = *plan.steps;
  if (arguments.size() != signature.numArguments())
    throw ArgumentError("'" + signature.name + "' takes " +
                        std::to_string(signature.numArguments()) +
                        " arguments, got " + std::to_string(arguments.size()));
  // The arguments are those the plan was made for (dtypes, ranks, sizes;
  // planKey's layout after the batch size).
  size_t at = 1;
  bool fits = true;
  for (const DeviceArray &a : arguments) {
    fits = fits && at + 2 + a.shape.size() <= steps.key.size() &&
           steps.key[at] == static_cast<int64_t>(a.dtype) &&
           steps.key[at + 1] == static_cast<int64_t>(a.shape.size()) &&
           std::equal(a.shape.begin(), a.shape.end(),
                      steps.key.begin() + at + 2);
    at += 2 + a.shape.size();
  }
  if (!fits || at != steps.key.size())
    throw ArgumentError("'" + signature.name +
                        "' got a launch plan made for arrays of other "
                        "dtypes or sizes");
  // The results' shapes are the plan's (the usual case, compared without
  // building descriptions), or checkResults says what is wrong.
  bool resultsMatch = results.size() == plan.resultShapes.size();
  for (size_t r = 0; resultsMatch && r < results.size(); ++r)
    resultsMatch =
        results[r].dtype ==
            signature.params[signature.numArguments() + r].dtype &&
        results[r].shape == plan.resultShapes[r];
  std::string error;
  if (!resultsMatch && !checkResults(signature, plan.bindings,
                                     describe(results), error))
    throw ArgumentError(error);
  useDevice(device_);
  checkPlacement(signature, arguments, 0, device_);
  checkPlacement(signature, results, signature.numArguments(), device_);

  const Driver &d = driver();
  CUstream stream = reinterpret_cast<CUstream>(streamHandle);
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
  scratch.buffers.resize(manifest_.scratch.size());
  for (size_t i = 0; i < manifest_.scratch.size(); ++i)
    ensure(scratch.buffers[i], steps.scratchBytes[i]);
  auto bufferData = [&](BufferRef::Kind kind, int index) -> CUdeviceptr {
    return kind == BufferRef::Kind::Param ? paramData(index)
                                          : scratch.buffers[index].first;
  };

  // Checked mode: every index against its tables, on the GPU. All checks
  // run before one synchronization; each writes the first bad position of
  // its array into its own slot (a slot filled with 0x7f bytes: none).
  if (options.checked && !manifest_.checks.empty()) {
    if (!steps.checkError.empty())
      throw ArgumentError(steps.checkError);
    size_t numChecks = manifest_.checks.size();
    ensure(scratch.checkBuffer, numChecks * sizeof(int64_t));
    CUdeviceptr slots = scratch.checkBuffer.first;
    check(d.cuMemsetD8Async(slots, 0x7f, numChecks * sizeof(int64_t), stream),
          "cuMemsetD8Async (index check)");
    std::vector<int64_t> counts = steps.checkCounts, bounds = steps.checkBounds;
    for (size_t i = 0; i < numChecks; ++i) {
      const IndexCheck &c = manifest_.checks[i];
      const Parameter &p = signature.params[c.param];
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

  // Tensor maps pass by value (128 bytes, 64-byte aligned).
  struct alignas(64) TensorMap {
    unsigned char bytes[128];
  };
  std::vector<uint64_t> words;
  std::vector<TensorMap> maps;
  std::vector<void *> params;
  for (const Steps::Step &step : steps.steps) {
    if (step.kind == LaunchStep::Kind::Memset) {
      uint32_t value = step.source->value;
      CUdeviceptr data = bufferData(step.bufferKind, step.buffer);
      check(value ? d.cuMemsetD32Async(data, value, step.bytes / 4, stream)
                  : d.cuMemsetD8Async(data, 0, step.bytes, stream),
            [&] {
              return step.bufferKind == BufferRef::Kind::Param
                         ? "clearing result '" +
                               manifest_.signature.params[step.buffer].name + "'"
                         : "clearing scratch buffer '" +
                               manifest_.scratch[step.buffer].name + "'";
            });
      continue;
    }
    words = step.words;
    for (const Steps::Address &a : step.addresses)
      words[a.word] = bufferData(a.kind, a.index);
    maps.assign(step.maps.size(), TensorMap{});
    for (size_t m = 0; m < step.maps.size(); ++m) {
      const Steps::Map &map = step.maps[m];
      if (!map.rows || !map.cols)
        continue;
      uint64_t dims[2] = {map.cols, map.rows};
      uint64_t strides[1] = {map.cols * dtypeSize(map.dtype)};
      unsigned box[2] = {map.box[0], map.box[1]};
      unsigned unit[2] = {1, 1};
      // CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6, _FLOAT32 = 7, _BFLOAT16 = 9; no
      // interleave, 128-byte swizzle (3), L2 promotion of 128 bytes (2),
      // zero fill (0).
      int type =
          map.dtype == DType::F16 ? 6 : map.dtype == DType::BF16 ? 9 : 7;
      check(d.cuTensorMapEncodeTiled(
                maps[m].bytes, type, 2,
                reinterpret_cast<void *>(bufferData(map.kind, map.index)),
                dims, strides, box, unit, 0, 3, 2, 0),
            [&] { return "encoding the tensor map of '" + map.name + "'"; });
    }
    uint32_t *halves = const_cast<uint32_t *>(step.halves.data());
    params.clear();
    for (auto [slot, index] : step.slots)
      params.push_back(slot == Steps::Slot::Map
                           ? static_cast<void *>(maps[index].bytes)
                       : slot == Steps::Slot::Half
                           ? static_cast<void *>(halves + index)
                           : static_cast<void *>(&words[index]));
    CUresult launched;
    if (step.dependent && impl_->dependentLaunch && mayDepend) {
      // The kernel waits for the previous work itself: it may start (its
      // blocks resident, waiting) while the previous kernel finishes.
      CUlaunchConfig config = {};
      config.gridDimX = step.grid[0];
      config.gridDimY = step.grid[1];
      config.gridDimZ = step.grid[2];
      config.blockDimX = step.block[0];
      config.blockDimY = step.block[1];
      config.blockDimZ = step.block[2];
      config.sharedMemBytes = step.shared;
      config.hStream = stream;
      CUlaunchAttribute attribute = {};
      attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
      attribute.value.programmaticStreamSerializationAllowed = 1;
      config.attrs = &attribute;
      config.numAttrs = 1;
      launched =
          d.cuLaunchKernelEx(&config, step.function, params.data(), nullptr);
    } else {
      launched = d.cuLaunchKernel(step.function, step.grid[0], step.grid[1],
                                  step.grid[2], step.block[0], step.block[1],
                                  step.block[2], step.shared, stream,
                                  params.data(), nullptr);
    }
    check(launched, [&] {
      return "launching kernel '" + step.source->function + "' of bundle '" +
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
      for (auto &buffer : scratch.buffers)
        if (buffer.first)
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
  std::shared_ptr<const LaunchPlan> plan =
      program_->plan(arguments, options.batchSize);
  state_->device = program_->device();
  useDevice(state_->device);
  check(d.cuStreamCreate(&state_->stream, CU_STREAM_NON_BLOCKING),
        "cuStreamCreate");
  uint64_t stream = reinterpret_cast<uint64_t>(state_->stream);
  // The first run allocates the scratch buffers and configures shared
  // memory: neither may happen while capturing. Then the plan is captured
  // in order (no programmatic dependences inside the graph).
  program_->launch(*plan, arguments, results, options, &state_->scratch,
                   stream, /*mayDepend=*/false);
  check(d.cuStreamSynchronize(state_->stream), "the call before the capture");
  check(d.cuStreamBeginCapture(state_->stream,
                               CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  try {
    program_->launch(*plan, arguments, results, options, &state_->scratch,
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
