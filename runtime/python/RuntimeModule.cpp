//===- RuntimeModule.cpp - the kge_runtime Python module ------------------===//
//
// Loads kernel bundles and runs them on framework tensors. Arrays are read
// from PyTorch tensors directly (data_ptr/shape/stride/dtype/device), or
// from any object with __cuda_array_interface__ or __dlpack__ (CuPy, JAX,
// ...). Results are allocated on the device of the first table argument
// (torch: new_empty, with the result's dtype) or, for other frameworks, as
// DeviceBuffer objects exposing __cuda_array_interface__.
//
//===----------------------------------------------------------------------===//

#include "kge/runtime/Cuda.h"
#include "kge/runtime/RowUpdate.h"
#include "kge/runtime/Runtime.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
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

// The caches below are only touched with the GIL held (every caller runs
// in a Python call before the GIL is released), which serializes them.

/// Caches the DType of torch dtype objects (str() of a dtype is slow).
DType torchDType(py::handle dtype, const std::string &name) {
  static std::unordered_map<PyObject *, DType> cache;
  auto it = cache.find(dtype.ptr());
  if (it != cache.end())
    return it->second;
  std::string text = py::str(dtype);
  std::optional<DType> parsed = dtypeFromTorchName(text);
  if (!parsed)
    throw ArgumentError("'" + name + "' has dtype " + text +
                        ", which KGE bundles do not use");
  // dtype objects are singletons that live as long as torch: a borrowed
  // pointer is a stable key.
  cache.emplace(dtype.ptr(), *parsed);
  return *parsed;
}

/// Attribute and method names, interned once: the per-call path looks them
/// up by identity instead of building strings.
struct Names {
  PyObject *dataPtr, *shape, *isContiguous, *stride, *dtype, *getDevice,
      *newEmpty;
  static const Names &get() {
    static const Names names{
        PyUnicode_InternFromString("data_ptr"),
        PyUnicode_InternFromString("shape"),
        PyUnicode_InternFromString("is_contiguous"),
        PyUnicode_InternFromString("stride"),
        PyUnicode_InternFromString("dtype"),
        PyUnicode_InternFromString("get_device"),
        PyUnicode_InternFromString("new_empty")};
    return names;
  }
};

/// obj.name(args...) as a new reference; throws the Python error on
/// failure. Vectorcall (Python 3.9+) builds no bound-method object.
template <typename... Args>
py::object callMethod(py::handle obj, PyObject *name, Args... args) {
#if PY_VERSION_HEX >= 0x03090000
  PyObject *stack[] = {obj.ptr(), args.ptr()...};
  PyObject *result = PyObject_VectorcallMethod(
      name, stack, (1 + sizeof...(Args)) | PY_VECTORCALL_ARGUMENTS_OFFSET,
      nullptr);
#else
  PyObject *result = PyObject_CallMethodObjArgs(obj.ptr(), name, args.ptr()...,
                                                nullptr);
#endif
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

py::object getAttr(py::handle obj, PyObject *name) {
  PyObject *result = PyObject_GetAttr(obj.ptr(), name);
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
}

/// table.new_empty(shape, dtype=<torch dtype of `dtype`>): a tensor on the
/// table's device in another dtype (f32 scores of half-precision tables).
/// The dtype objects are looked up once (torch is imported: the table is a
/// torch tensor) and the call is a vectorcall with one keyword.
py::object newEmptyOfDType(py::handle table, py::handle shape, DType dtype) {
  static const char *const names[] = {"float16", "bfloat16", "float32",
                                      "float64", "int32",    "int64"};
  static std::array<PyObject *, 6> dtypes{};
  PyObject *&object = dtypes[static_cast<int>(dtype)];
  if (!object) // kept for the life of the process, like torch's own
    object = py::object(py::module_::import("torch").attr(
                            names[static_cast<int>(dtype)]))
                 .release()
                 .ptr();
#if PY_VERSION_HEX >= 0x03090000
  static PyObject *keywords = Py_BuildValue("(s)", "dtype");
  PyObject *stack[] = {table.ptr(), shape.ptr(), object};
  PyObject *result = PyObject_VectorcallMethod(
      Names::get().newEmpty, stack, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET,
      keywords);
  if (!result)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(result);
#else
  return getAttr(table, Names::get().newEmpty)(
      shape, py::arg("dtype") = py::handle(object));
#endif
}

/// The integers of a tuple (torch.Size is one) or any sequence.
std::vector<int64_t> toInt64s(py::handle sequence) {
  std::vector<int64_t> values;
  if (PyTuple_Check(sequence.ptr())) {
    Py_ssize_t n = PyTuple_GET_SIZE(sequence.ptr());
    values.reserve(static_cast<size_t>(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(sequence.ptr(), i));
      if (v == -1 && PyErr_Occurred())
        throw py::error_already_set();
      values.push_back(v);
    }
    return values;
  }
  for (py::handle item : sequence)
    values.push_back(item.cast<int64_t>());
  return values;
}

/// Whether `object` is a PyTorch tensor (its type, or a base, was seen to
/// have the tensor attributes; cached per type).
bool isTorchTensor(py::handle object) {
  static std::unordered_map<PyTypeObject *, bool> known;
  PyTypeObject *type = Py_TYPE(object.ptr());
  auto it = known.find(type);
  if (it != known.end())
    return it->second;
  bool torch = py::hasattr(object, "data_ptr") &&
               py::hasattr(object, "get_device") &&
               py::hasattr(object, "is_contiguous");
  // Keep the type alive: its address is the key.
  Py_INCREF(type);
  known.emplace(type, torch);
  return torch;
}

/// The data pointer of a torch tensor.
uint64_t torchDataPointer(py::handle tensor) {
  py::object pointer = callMethod(tensor, Names::get().dataPtr);
  uint64_t data = PyLong_AsUnsignedLongLong(pointer.ptr());
  if (PyErr_Occurred())
    throw py::error_already_set();
  return data;
}

/// Reads one array argument.
DeviceArray readArray(py::handle object, const std::string &name) {
  DeviceArray array;
  // PyTorch: direct attribute access is an order of magnitude faster than
  // building __cuda_array_interface__ or a DLPack capsule.
  if (isTorchTensor(object)) {
    const Names &n = Names::get();
    array.data = torchDataPointer(object);
    array.shape = toInt64s(getAttr(object, n.shape));
    if (callMethod(object, n.isContiguous).ptr() != Py_True)
      array.strides = toInt64s(callMethod(object, n.stride));
    array.dtype = torchDType(getAttr(object, n.dtype), name);
    long device = PyLong_AsLong(callMethod(object, n.getDevice).ptr());
    if (device == -1 && PyErr_Occurred())
      throw py::error_already_set();
    array.device = device < 0 ? -2 : static_cast<int>(device);
    return array;
  }
  if (py::hasattr(object, "__cuda_array_interface__")) {
    py::dict cai = object.attr("__cuda_array_interface__");
    py::tuple data = cai["data"];
    array.data = data[0].cast<uint64_t>();
    array.shape = toInt64s(cai["shape"]);
    std::string typestr = cai["typestr"].cast<std::string>();
    std::optional<DType> dtype = dtypeFromTypestr(typestr);
    if (!dtype)
      throw ArgumentError("'" + name + "' has typestr " + typestr +
                          ", which KGE bundles do not use");
    array.dtype = *dtype;
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      for (int64_t bytes : toInt64s(cai["strides"]))
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
  /// The keywords of a call that are options, not arguments (in the order
  /// call() reads them).
  static constexpr std::array<const char *, 4> kOptions = {
      "stream", "checked", "batch_size", "out"};

public:
  PyProgram(const py::object &bundle, int device) {
    std::string text = py::isinstance<py::bytes>(bundle)
                           ? bundle.cast<std::string>()
                           : bundle.cast<std::string>();
    {
      py::gil_scoped_release release;
      program = Program::load(text, device);
    }
    for (const Parameter &p : program->manifest().signature.params)
      names.push_back(py::reinterpret_steal<py::object>(
          PyUnicode_InternFromString(p.name.c_str())));
  }

  /// A call's arrays read and checked, its results allocated.
  struct Prepared {
    CallOptions options;
    std::shared_ptr<const LaunchPlan> plan;
    std::vector<DeviceArray> arguments, results;
    /// The result objects in signature order.
    std::vector<py::object> resultObjects;
  };

  /// Reads the argument `value` of parameter `i`, remembering the first
  /// table (results are allocated like it).
  void readArgument(Prepared &prepared, unsigned i, py::handle value,
                    py::handle &firstTable, unsigned &firstTableIndex) const {
    const Parameter &p = program->manifest().signature.params[i];
    prepared.arguments.push_back(readArray(value, p.name));
    if (p.role == ParamRole::Table && !firstTable) {
      firstTable = value;
      firstTableIndex = i;
    }
  }

  /// Gets the plan of the read arguments; reads the given results (`given`
  /// returns the object of result r, or null) or allocates them.
  template <typename Given>
  void finish(Prepared &prepared, py::handle firstTable,
              unsigned firstTableIndex, Given &&given) {
    const Signature &signature = program->manifest().signature;
    std::vector<DeviceArray> &arguments = prepared.arguments;
    prepared.plan = program->plan(arguments, prepared.options.batchSize);
    const std::vector<std::vector<int64_t>> &shapes =
        prepared.plan->resultShapes;
    prepared.results.reserve(shapes.size());
    prepared.resultObjects.reserve(shapes.size());
    for (unsigned r = 0; r < shapes.size(); ++r) {
      const Parameter &p = signature.params[signature.numArguments() + r];
      py::object out;
      if (py::handle object = given(r)) {
        out = py::reinterpret_borrow<py::object>(object);
        prepared.results.push_back(readArray(out, p.name));
      } else if (firstTable && isTorchTensor(firstTable)) {
        py::tuple shape(shapes[r].size());
        for (size_t d = 0; d < shapes[r].size(); ++d)
          shape[d] = py::int_(shapes[r][d]);
        // new_empty gives a contiguous tensor of this shape on the table's
        // device: only its address is new. It has the table's dtype unless
        // told otherwise (f32 scores of half-precision tables).
        if (arguments[firstTableIndex].dtype == p.dtype)
          out = callMethod(firstTable, Names::get().newEmpty, shape);
        else
          out = newEmptyOfDType(firstTable, shape, p.dtype);
        DeviceArray array;
        array.data = torchDataPointer(out);
        array.dtype = p.dtype;
        array.shape = shapes[r];
        array.device = arguments[firstTableIndex].device;
        prepared.results.push_back(std::move(array));
      } else {
        int device = arguments.empty() ? program->device() : arguments[0].device;
        out = py::cast(std::make_shared<DeviceBuffer>(
            shapes[r], p.dtype, device < 0 ? program->device() : device));
        prepared.results.push_back(readArray(out, p.name));
      }
      prepared.resultObjects.push_back(std::move(out));
    }
  }

  Prepared prepare(const py::kwargs &kwargs) {
    Prepared prepared;
    const Signature &signature = program->manifest().signature;
    PyObject *kw = kwargs.ptr();
    static const std::array<PyObject *, 4> keys = [] {
      std::array<PyObject *, 4> interned;
      for (size_t i = 0; i < kOptions.size(); ++i)
        interned[i] = PyUnicode_InternFromString(kOptions[i]);
      return interned;
    }();
    PyObject *streamKey = keys[0], *checkedKey = keys[1], *batchKey = keys[2],
             *outKey = keys[3];
    auto option = [&](PyObject *key, Py_ssize_t &seen) -> py::handle {
      PyObject *value = PyDict_GetItemWithError(kw, key);
      if (!value && PyErr_Occurred())
        throw py::error_already_set();
      seen += value != nullptr;
      return value;
    };
    CallOptions &options = prepared.options;
    py::dict outs;
    Py_ssize_t recognized = 0;
    if (py::handle v = option(streamKey, recognized); v && !v.is_none())
      options.stream = v.cast<uint64_t>();
    if (py::handle v = option(checkedKey, recognized))
      options.checked = v.cast<bool>();
    if (py::handle v = option(batchKey, recognized); v && !v.is_none())
      options.batchSize = v.cast<int64_t>();
    if (py::handle v = option(outKey, recognized); v && !v.is_none())
      outs = v.cast<py::dict>();

    prepared.arguments.reserve(signature.numArguments());
    py::handle firstTable;
    unsigned firstTableIndex = 0;
    for (unsigned i = 0; i < signature.numArguments(); ++i) {
      PyObject *value = PyDict_GetItemWithError(kw, names[i].ptr());
      if (!value) {
        if (PyErr_Occurred())
          throw py::error_already_set();
        throw ArgumentError("missing argument '" + signature.params[i].name +
                            "' of '" + signature.name + "'");
      }
      ++recognized;
      readArgument(prepared, i, value, firstTable, firstTableIndex);
    }
    if (PyDict_Size(kw) != recognized)
      rejectUnknown(kwargs);
    finish(prepared, firstTable, firstTableIndex, [&](unsigned r) {
      PyObject *given = PyDict_GetItemWithError(
          outs.ptr(), names[signature.numArguments() + r].ptr());
      if (!given && PyErr_Occurred())
        throw py::error_already_set();
      return py::handle(given);
    });
    return prepared;
  }

  void launch(Prepared &prepared) {
    py::gil_scoped_release release;
    program->call(*prepared.plan, prepared.arguments, prepared.results,
                  prepared.options);
  }

  /// The results by name.
  py::dict resultDict(const Prepared &prepared) const {
    py::dict results;
    unsigned first = program->manifest().signature.numArguments();
    for (size_t r = 0; r < prepared.resultObjects.size(); ++r)
      if (PyDict_SetItem(results.ptr(), names[first + r].ptr(),
                         prepared.resultObjects[r].ptr()) < 0)
        throw py::error_already_set();
    return results;
  }

  py::dict call(const py::kwargs &kwargs) {
    Prepared prepared = prepare(kwargs);
    launch(prepared);
    return resultDict(prepared);
  }

  /// The lean entry point: the arguments in signature order, then
  /// optionally every result; returns the result (a tuple of them when
  /// there are several).
  py::object run(const py::args &args, std::optional<uint64_t> stream,
                 std::optional<int64_t> batchSize) {
    const Signature &signature = program->manifest().signature;
    unsigned numArguments = signature.numArguments();
    size_t given = args.size();
    if (given != numArguments && given != signature.params.size()) {
      auto list = [&](unsigned begin, unsigned end) {
        std::string names;
        for (unsigned i = begin; i < end; ++i)
          names += (i == begin ? "" : ", ") + signature.params[i].name;
        return names;
      };
      throw ArgumentError(
          "run() takes the arguments of '" + signature.name +
          "' in signature order (" + list(0, numArguments) +
          "), optionally followed by its results (" +
          list(numArguments, signature.params.size()) + "); got " +
          std::to_string(given) + " arrays");
    }
    Prepared prepared;
    prepared.options.stream = stream.value_or(0);
    prepared.options.batchSize = batchSize;
    prepared.arguments.reserve(numArguments);
    py::handle firstTable;
    unsigned firstTableIndex = 0;
    PyObject *tuple = args.ptr();
    for (unsigned i = 0; i < numArguments; ++i)
      readArgument(prepared, i, PyTuple_GET_ITEM(tuple, i), firstTable,
                   firstTableIndex);
    finish(prepared, firstTable, firstTableIndex, [&](unsigned r) {
      return py::handle(given > numArguments
                            ? PyTuple_GET_ITEM(tuple, numArguments + r)
                            : nullptr);
    });
    launch(prepared);
    if (prepared.resultObjects.size() == 1)
      return std::move(prepared.resultObjects.front());
    py::tuple results(prepared.resultObjects.size());
    for (size_t r = 0; r < prepared.resultObjects.size(); ++r)
      results[r] = prepared.resultObjects[r];
    return results;
  }

  /// Names the first keyword that is neither an argument nor an option.
  [[noreturn]] void rejectUnknown(const py::kwargs &kwargs) const {
    const Signature &signature = program->manifest().signature;
    for (auto item : kwargs) {
      std::string key = item.first.cast<std::string>();
      if (std::find(kOptions.begin(), kOptions.end(), key) != kOptions.end())
        continue;
      int index = signature.find(key);
      if (index < 0 || signature.params[index].role == ParamRole::Result)
        throw ArgumentError("'" + signature.name +
                            "' has no argument named '" + key + "'");
    }
    throw ArgumentError("'" + signature.name + "' got unexpected arguments");
  }

  std::shared_ptr<Program> program;
  /// Interned parameter names, in signature order.
  std::vector<py::object> names;
};

/// A call captured in a CUDA graph, with the Python objects of its arrays
/// (kept alive: the graph holds their addresses).
struct PyCapturedCall {
  std::unique_ptr<CapturedCall> captured;
  py::dict arrays;
  py::dict results;

  void replay(uint64_t stream) {
    py::gil_scoped_release release;
    captured->replay(stream);
  }
};

PyCapturedCall capture(PyProgram &self, const py::kwargs &kwargs) {
  PyProgram::Prepared prepared = self.prepare(kwargs);
  PyCapturedCall result;
  {
    py::gil_scoped_release release;
    result.captured = std::make_unique<CapturedCall>(
        self.program, prepared.arguments, prepared.results, prepared.options);
  }
  for (auto item : kwargs)
    result.arrays[item.first] = item.second;
  result.results = self.resultDict(prepared);
  return result;
}

/// An optional array argument (None: absent).
std::optional<DeviceArray> readOptional(py::handle object,
                                        const std::string &name) {
  if (object.is_none())
    return std::nullopt;
  return readArray(object, name);
}

const DeviceArray *pointer(const std::optional<DeviceArray> &array) {
  return array ? &*array : nullptr;
}

/// The row-sparse optimizer's kernels (kge/runtime/RowUpdate.h).
void defineRowUpdates(py::module_ &m) {
  m.def(
      "rows_add",
      [](py::handle index, py::handle values, py::handle grad,
         py::handle firstBad, py::handle touched, uint64_t stream) {
        DeviceArray i = readArray(index, "index"),
                    v = readArray(values, "values"),
                    g = readArray(grad, "grad"),
                    bad = readArray(firstBad, "first_bad");
        std::optional<DeviceArray> t = readOptional(touched, "touched");
        py::gil_scoped_release release;
        rows::add(i, v, g, pointer(t), bad, stream);
      },
      py::arg("index"), py::arg("values"), py::arg("grad"),
      py::arg("first_bad"), py::arg("touched") = py::none(),
      py::arg("stream") = 0,
      "grad[index[k]] += values[k] (float32, atomically); touched[index[k]] "
      "= 1 (int32) when given; an index beyond grad's rows is skipped and "
      "its smallest position written to first_bad (one int64 the caller "
      "set >= len(index)). Launches on `stream` without waiting.");
  m.def(
      "adagrad_rows",
      [](py::handle param, py::handle sumSquares, py::handle grad, float lr,
         float eps, py::handle index, py::handle firstBad, uint64_t stream) {
        DeviceArray p = readArray(param, "param"),
                    s = readArray(sumSquares, "sum_squares"),
                    g = readArray(grad, "grad");
        std::optional<DeviceArray> i = readOptional(index, "index"),
                                   bad = readOptional(firstBad, "first_bad");
        py::gil_scoped_release release;
        rows::adagrad(p, s, g, pointer(i), pointer(bad), lr, eps, stream);
      },
      py::arg("param"), py::arg("sum_squares"), py::arg("grad"),
      py::arg("lr"), py::arg("eps"), py::arg("index") = py::none(),
      py::arg("first_bad") = py::none(), py::arg("stream") = 0,
      "Adagrad on the rows `grad` names: table row index[u] takes grad[u] "
      "(an index beyond the table skipped, its position written to "
      "first_bad, which an index needs); without index, grad is a buffer "
      "shaped like param, zero where no row was reached, cleared after "
      "use.");
  m.def(
      "adam_rows",
      [](py::handle param, py::handle m1, py::handle m2, py::handle grad,
         py::handle stepSize, double beta1, double beta2, float eps,
         py::handle index, py::handle touched, py::handle firstBad,
         uint64_t stream) {
        DeviceArray p = readArray(param, "param"), a = readArray(m1, "m"),
                    b = readArray(m2, "v"), g = readArray(grad, "grad"),
                    size = readArray(stepSize, "step_size");
        std::optional<DeviceArray> i = readOptional(index, "index"),
                                   t = readOptional(touched, "touched"),
                                   bad = readOptional(firstBad, "first_bad");
        py::gil_scoped_release release;
        rows::adam(p, a, b, g, pointer(i), pointer(t), pointer(bad), size,
                   beta1, beta2, eps, stream);
      },
      py::arg("param"), py::arg("m"), py::arg("v"), py::arg("grad"),
      py::arg("step_size"), py::arg("beta1"), py::arg("beta2"),
      py::arg("eps"), py::arg("index") = py::none(),
      py::arg("touched") = py::none(), py::arg("first_bad") = py::none(),
      py::arg("stream") = 0,
      "Lazy Adam (SparseAdam's update) on the rows `grad` names, with the "
      "bias-corrected step read from step_size (one float32 on the device); "
      "index and first_bad as for adagrad_rows; without index, the rows "
      "whose touched flag (int32) is set, flags and buffer cleared after "
      "use.");
}

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
  defineRowUpdates(m);
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

  py::class_<PyCapturedCall>(m, "CapturedCall")
      .def("replay", &PyCapturedCall::replay, py::arg("stream") = 0,
           "Launch the captured call on a stream (a CUstream handle; 0: the "
           "legacy default stream)")
      .def("__call__", &PyCapturedCall::replay, py::arg("stream") = 0)
      .def_readonly("results", &PyCapturedCall::results,
                    "The result arrays the replays write, by name")
      .def_readonly("arrays", &PyCapturedCall::arrays,
                    "The arguments and options of the captured call");

  py::class_<PyProgram>(m, "Program")
      .def(py::init<const py::object &, int>(), py::arg("bundle"),
           py::arg("device") = 0,
           "Load a bundle (its JSON text) on a CUDA device")
      .def("__call__", &PyProgram::call,
           "Run with the arguments by name; returns the results by name. "
           "Options: out={name: tensor}, stream=handle, checked=bool, "
           "batch_size=int")
      .def("run", &PyProgram::run, py::arg("stream") = py::none(),
           py::arg("batch_size") = py::none(),
           "The lean entry point: run(*arrays, stream=0, batch_size=None) "
           "with the "
           "arguments in signature order, then optionally every result "
           "(written in place); returns the result, or a tuple of them. "
           "Launch plans are kept per set of shapes, so a call with shapes "
           "seen before reads the arrays' addresses and launches")
      .def_property_readonly(
          "num_plans",
          [](const PyProgram &p) { return p.program->numPlans(); },
          "How many launch plans the program holds (one per set of "
          "argument shapes)")
      .def("capture", &capture,
           "Capture one call (the same arguments and options as a call) in "
           "a CUDA graph: returns a CapturedCall whose replay() runs it "
           "again on the same arrays with one graph launch. Write the next "
           "inputs into those arrays; read the results from "
           "CapturedCall.results")
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
