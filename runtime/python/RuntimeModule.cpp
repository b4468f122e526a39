//===- RuntimeModule.cpp - the kge_runtime Python module ------------------===//
//
// Loads kernel bundles and runs them on framework tensors. Arrays are read
// from PyTorch tensors directly (data_ptr/shape/stride/dtype/device), or
// from any object with __cuda_array_interface__ or __dlpack__ (CuPy, JAX,
// ...). Results are allocated like the first table argument (torch:
// new_empty) or, for other frameworks, as DeviceBuffer objects exposing
// __cuda_array_interface__.
//
//===----------------------------------------------------------------------===//

#include "kge/runtime/Cuda.h"
#include "kge/runtime/Runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <mutex>
#include <unordered_map>

namespace py = pybind11;
using namespace kge_runtime;

namespace {

//===----------------------------------------------------------------------===//
// DLPack (the ABI of dlpack.h, version 0.8)
//===----------------------------------------------------------------------===//

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *);
};
enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAManaged = 13 };
enum { kDLInt = 0, kDLFloat = 2, kDLBfloat = 4 };

//===----------------------------------------------------------------------===//
// Reading arrays
//===----------------------------------------------------------------------===//

std::optional<DType> dtypeFromTorchName(const std::string &name) {
  static const std::pair<const char *, DType> table[] = {
      {"torch.float32", DType::F32}, {"torch.float64", DType::F64},
      {"torch.float16", DType::F16}, {"torch.bfloat16", DType::BF16},
      {"torch.int32", DType::I32},   {"torch.int64", DType::I64}};
  for (auto &[n, d] : table)
    if (name == n)
      return d;
  return std::nullopt;
}

std::optional<DType> dtypeFromTypestr(const std::string &typestr) {
  static const std::pair<const char *, DType> table[] = {
      {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
      {"<i4", DType::I32}, {"<i8", DType::I64}};
  for (auto &[n, d] : table)
    if (typestr == n)
      return d;
  return std::nullopt;
}

std::optional<DType> dtypeFromDLPack(DLDataType t) {
  if (t.lanes != 1)
    return std::nullopt;
  if (t.code == kDLFloat && t.bits == 32)
    return DType::F32;
  if (t.code == kDLFloat && t.bits == 64)
    return DType::F64;
  if (t.code == kDLFloat && t.bits == 16)
    return DType::F16;
  if (t.code == kDLBfloat && t.bits == 16)
    return DType::BF16;
  if (t.code == kDLInt && t.bits == 32)
    return DType::I32;
  if (t.code == kDLInt && t.bits == 64)
    return DType::I64;
  return std::nullopt;
}

/// Caches the DType of torch dtype objects (str() of a dtype is slow).
DType torchDType(py::handle dtype, const std::string &name) {
  static std::mutex mutex;
  static std::unordered_map<PyObject *, DType> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(dtype.ptr());
    if (it != cache.end())
      return it->second;
  }
  std::string text = py::str(dtype);
  std::optional<DType> parsed = dtypeFromTorchName(text);
  if (!parsed)
    throw ArgumentError("'" + name + "' has dtype " + text +
                        ", which KGE bundles do not use");
  std::lock_guard<std::mutex> lock(mutex);
  cache[dtype.ptr()] = *parsed;
  return *parsed;
}

template <typename T> std::vector<int64_t> toVector(py::handle sequence) {
  std::vector<int64_t> values;
  for (py::handle item : sequence)
    values.push_back(item.cast<T>());
  return values;
}

/// Whether `object` is a PyTorch tensor (its type, or a base, was seen to
/// have the tensor attributes; cached per type).
bool isTorchTensor(py::handle object) {
  static std::mutex mutex;
  static std::unordered_map<PyTypeObject *, bool> known;
  PyTypeObject *type = Py_TYPE(object.ptr());
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = known.find(type);
    if (it != known.end())
      return it->second;
  }
  bool torch = py::hasattr(object, "data_ptr") &&
               py::hasattr(object, "get_device") &&
               py::hasattr(object, "is_contiguous");
  std::lock_guard<std::mutex> lock(mutex);
  known[type] = torch;
  return torch;
}

/// Reads one array argument.
DeviceArray readArray(py::handle object, const std::string &name) {
  DeviceArray array;
  // PyTorch: direct attribute access is an order of magnitude faster than
  // building __cuda_array_interface__ or a DLPack capsule.
  if (isTorchTensor(object)) {
    array.data = object.attr("data_ptr")().cast<uint64_t>();
    array.shape = toVector<int64_t>(object.attr("shape"));
    if (!object.attr("is_contiguous")().cast<bool>())
      array.strides = toVector<int64_t>(object.attr("stride")());
    array.dtype = torchDType(object.attr("dtype"), name);
    int device = object.attr("get_device")().cast<int>();
    array.device = device < 0 ? -2 : device;
    return array;
  }
  if (py::hasattr(object, "__cuda_array_interface__")) {
    py::dict cai = object.attr("__cuda_array_interface__");
    py::tuple data = cai["data"];
    array.data = data[0].cast<uint64_t>();
    array.shape = toVector<int64_t>(cai["shape"]);
    std::string typestr = cai["typestr"].cast<std::string>();
    std::optional<DType> dtype = dtypeFromTypestr(typestr);
    if (!dtype)
      throw ArgumentError("'" + name + "' has typestr " + typestr +
                          ", which KGE bundles do not use");
    array.dtype = *dtype;
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      for (int64_t bytes : toVector<int64_t>(cai["strides"]))
        array.strides.push_back(bytes / static_cast<int64_t>(dtypeSize(*dtype)));
    }
    return array;
  }
  if (py::hasattr(object, "__dlpack__")) {
    py::capsule capsule = object.attr("__dlpack__")();
    auto *managed = static_cast<DLManagedTensor *>(
        PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (!managed)
      throw ArgumentError("'" + name + "' gave an invalid DLPack capsule");
    const DLTensor &t = managed->dl_tensor;
    std::optional<DType> dtype = dtypeFromDLPack(t.dtype);
    array.data = reinterpret_cast<uint64_t>(t.data) + t.byte_offset;
    array.shape.assign(t.shape, t.shape + t.ndim);
    if (t.strides)
      array.strides.assign(t.strides, t.strides + t.ndim);
    array.device = (t.device.device_type == kDLCUDA ||
                    t.device.device_type == kDLCUDAManaged)
                       ? t.device.device_id
                       : -2;
    // Done reading: give the tensor back to its producer.
    PyCapsule_SetName(capsule.ptr(), "used_dltensor");
    if (managed->deleter)
      managed->deleter(managed);
    if (!dtype)
      throw ArgumentError("'" + name + "' has a DLPack dtype KGE bundles do "
                          "not use");
    array.dtype = *dtype;
    return array;
  }
  throw ArgumentError(
      "'" + name + "' must be a CUDA array (a torch tensor or an object with "
                   "__cuda_array_interface__ or __dlpack__), got " +
      std::string(py::str(py::type::of(object))));
}

//===----------------------------------------------------------------------===//
// Results without a framework: device memory with __cuda_array_interface__
//===----------------------------------------------------------------------===//

class DeviceBuffer {
public:
  DeviceBuffer(std::vector<int64_t> shape, DType dtype, int device)
      : shape(std::move(shape)), dtype(dtype), device(device) {
    size_t bytes = dtypeSize(dtype);
    for (int64_t d : this->shape)
      bytes *= static_cast<size_t>(d);
    cuda::check(cuda::driver().cuMemAlloc(&data, std::max<size_t>(bytes, 16)),
                "cuMemAlloc (result)");
  }
  ~DeviceBuffer() {
    if (data)
      cuda::driver().cuMemFree(data);
  }
  py::dict interface() const {
    static const char *typestrs[] = {"<f2", "<f2", "<f4", "<f8", "<i4", "<i8"};
    py::dict cai;
    cai["shape"] = py::tuple(py::cast(shape));
    cai["typestr"] = dtype == DType::BF16 ? "<V2"
                                          : typestrs[static_cast<int>(dtype)];
    cai["data"] = py::make_tuple(data, false);
    cai["version"] = 3;
    cai["strides"] = py::none();
    return cai;
  }

  std::vector<int64_t> shape;
  DType dtype;
  int device;
  cuda::CUdeviceptr data = 0;
};

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

py::dict describeSignature(const Signature &signature) {
  py::list params;
  for (const Parameter &p : signature.params) {
    py::dict entry;
    entry["name"] = p.name;
    entry["role"] = roleName(p.role);
    entry["dtype"] = dtypeName(p.dtype);
    py::list shape;
    for (const Dim &d : p.shape) {
      if (d.isStatic())
        shape.append(d.size);
      else
        shape.append(d.symbol);
    }
    entry["shape"] = shape;
    if (p.role == ParamRole::Indices) {
      py::list indexes;
      for (unsigned t : p.indexedTables)
        indexes.append(signature.params[t].name);
      entry["indexes"] = indexes;
    }
    params.append(entry);
  }
  py::dict result;
  result["name"] = signature.name;
  result["params"] = params;
  return result;
}

class PyProgram {
public:
  PyProgram(const py::object &bundle, int device) {
    std::string text = py::isinstance<py::bytes>(bundle)
                           ? bundle.cast<std::string>()
                           : bundle.cast<std::string>();
    py::gil_scoped_release release;
    program = Program::load(text, device);
  }

  py::dict call(py::kwargs kwargs) {
    const Signature &signature = program->manifest().signature;
    CallOptions options;
    py::dict outs;
    for (auto item : kwargs) {
      std::string key = item.first.cast<std::string>();
      if (key == "stream") {
        if (!item.second.is_none())
          options.stream = item.second.cast<uint64_t>();
      } else if (key == "checked") {
        options.checked = item.second.cast<bool>();
      } else if (key == "batch_size") {
        if (!item.second.is_none())
          options.batchSize = item.second.cast<int64_t>();
      } else if (key == "out") {
        if (!item.second.is_none())
          outs = item.second.cast<py::dict>();
      } else if (signature.find(key) < 0 ||
                 signature.params[signature.find(key)].role ==
                     ParamRole::Result) {
        throw ArgumentError("'" + signature.name + "' has no argument named '" +
                            key + "'");
      }
    }
    std::vector<DeviceArray> arguments;
    py::object firstTable;
    for (unsigned i = 0; i < signature.numArguments(); ++i) {
      const Parameter &p = signature.params[i];
      if (!kwargs.contains(p.name.c_str()))
        throw ArgumentError("missing argument '" + p.name + "' of '" +
                            signature.name + "'");
      py::object value = kwargs[p.name.c_str()];
      arguments.push_back(readArray(value, p.name));
      if (p.role == ParamRole::Table && !firstTable)
        firstTable = value;
    }

    Bindings bindings = program->bind(arguments, options.batchSize);
    std::vector<std::vector<int64_t>> shapes = program->resultShapes(bindings);
    py::dict results;
    std::vector<DeviceArray> resultArrays;
    for (unsigned r = 0; r < shapes.size(); ++r) {
      const Parameter &p = signature.params[signature.numArguments() + r];
      py::object out;
      if (outs.contains(p.name.c_str())) {
        out = outs[p.name.c_str()];
      } else if (firstTable && py::hasattr(firstTable, "new_empty")) {
        out = firstTable.attr("new_empty")(py::tuple(py::cast(shapes[r])));
      } else {
        int device = arguments.empty() ? program->device() : arguments[0].device;
        out = py::cast(std::make_shared<DeviceBuffer>(
            shapes[r], p.dtype, device < 0 ? program->device() : device));
      }
      resultArrays.push_back(readArray(out, p.name));
      results[p.name.c_str()] = out;
    }
    {
      py::gil_scoped_release release;
      program->call(bindings, arguments, resultArrays, options);
    }
    return results;
  }

  std::shared_ptr<Program> program;
};

} // namespace

PYBIND11_MODULE(kge_runtime, m) {
  m.doc() = "Load KGE kernel bundles and run them on CUDA tensors";

  auto error = py::register_exception<Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<BundleError>(m, "BundleError", PyExc_ValueError);
  py::register_exception<ArgumentError>(m, "ArgumentError", PyExc_ValueError);
  py::register_exception<IndexRangeError>(m, "IndexRangeError",
                                          PyExc_IndexError);
  py::register_exception<CudaError>(m, "CudaError", error.ptr());

  m.def("device_count", &deviceCount, "Number of CUDA devices");
  m.def(
      "validate_bundle",
      [](const std::string &text) {
        Manifest manifest = Manifest::parse(text);
        return describeSignature(manifest.signature);
      },
      "Parse and validate a bundle without a GPU; returns its signature");

  py::class_<DeviceBuffer, std::shared_ptr<DeviceBuffer>>(m, "DeviceBuffer")
      .def_property_readonly("__cuda_array_interface__",
                             &DeviceBuffer::interface)
      .def_property_readonly("shape", [](const DeviceBuffer &b) {
        return py::tuple(py::cast(b.shape));
      });

  py::class_<PyProgram>(m, "Program")
      .def(py::init<const py::object &, int>(), py::arg("bundle"),
           py::arg("device") = 0,
           "Load a bundle (its JSON text) on a CUDA device")
      .def("__call__", &PyProgram::call,
           "Run with the arguments by name; returns the results by name. "
           "Options: out={name: tensor}, stream=handle, checked=bool, "
           "batch_size=int")
      .def_property_readonly(
          "signature",
          [](const PyProgram &p) {
            return describeSignature(p.program->manifest().signature);
          })
      .def_property_readonly("name",
                             [](const PyProgram &p) {
                               return p.program->manifest().signature.name;
                             })
      .def_property_readonly("mode", [](const PyProgram &p) {
        const std::string &corrupted = p.program->manifest().corrupted;
        return corrupted.empty() ? std::string("positive")
                                 : "negative:" + corrupted;
      });
}
