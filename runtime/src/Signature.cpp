//===- Signature.cpp - score-function signatures and argument binding -----===//

#include "kge/runtime/Signature.h"


namespace kge_runtime {

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "?";
}

std::optional<DType> parseDType(const std::string &name) {
  for (DType dtype : {DType::F16, DType::BF16, DType::F32, DType::F64,
                      DType::I32, DType::I64})
    if (name == dtypeName(dtype))
      return dtype;
  return std::nullopt;
}

unsigned dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  return 0;
}

std::string Parameter::describe() const {
  return std::string(roleName(role)) + " '" + name + "'";
}

const char *roleName(ParamRole role) {
  switch (role) {
  case ParamRole::Table:
    return "table";
  case ParamRole::Indices:
    return "indices";
  case ParamRole::Result:
    return "result";
  case ParamRole::Output:
    return "output";
  }
  return "?";
}

std::string Dim::str() const {
  return isStatic() ? std::to_string(size) : symbol;
}

unsigned Signature::numArguments() const {
  unsigned n = 0;
  for (const Parameter &p : params)
    if (p.role != ParamRole::Result)
      ++n;
  return n;
}

int Signature::find(const std::string &name) const {
  for (unsigned i = 0; i < params.size(); ++i)
    if (params[i].name == name)
      return static_cast<int>(i);
  return -1;
}

int64_t Bindings::lookup(const std::string &symbol) const {
  auto it = symbols.find(symbol);
  return it == symbols.end() ? -1 : it->second;
}

std::vector<int64_t> Bindings::shapeOf(const Parameter &param) const {
  std::vector<int64_t> shape;
  for (const Dim &dim : param.shape)
    shape.push_back(dim.isStatic() ? dim.size : lookup(dim.symbol));
  return shape;
}

// Messages are built from strings, not iostreams: the runtime lives in
// processes (PyTorch's) whose C++ locale state it must not depend on.
static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

static std::string shapeString(const std::vector<Dim> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i].str();
  return text + "]";
}

/// What set `symbol` first: the requested batch size or the first of
/// `signature`'s parameters before `before` that has it (for messages).
static std::string originOf(const Signature &signature, unsigned before,
                            const std::string &symbol, bool batchSizeGiven) {
  if (batchSizeGiven && symbol == "B")
    return "the requested batch size";
  for (unsigned i = 0; i < before; ++i)
    for (const Dim &dim : signature.params[i].shape)
      if (!dim.isStatic() && dim.symbol == symbol)
        return signature.params[i].name;
  return symbol;
}

/// Checks argument `index` against its parameter, binding its symbols. No
/// string is built unless there is an error (this runs on every call).
static bool bindOne(const Signature &signature, unsigned index,
                    const ArrayDesc &array, bool batchSizeGiven,
                    Bindings &bindings, std::string &error) {
  const Parameter &param = signature.params[index];
  auto what = [&] { return param.describe(); };
  if (array.dtype != param.dtype) {
    error = what() + " expects dtype " + dtypeName(param.dtype) + ", got " +
            dtypeName(array.dtype);
    return false;
  }
  if (array.shape.size() != param.shape.size()) {
    error = what() + " expects rank " + std::to_string(param.shape.size()) +
            " (shape " + shapeString(param.shape) + "), got rank " +
            std::to_string(array.shape.size()) + " (shape " +
            shapeString(array.shape) + ")";
    return false;
  }
  for (size_t d = 0; d < param.shape.size(); ++d) {
    const Dim &dim = param.shape[d];
    int64_t actual = array.shape[d];
    auto where = [&] { return " in dimension " + std::to_string(d); };
    if (actual < 0) {
      error = what() + " has negative size " + std::to_string(actual) + where();
      return false;
    }
    if (dim.isStatic()) {
      if (actual != dim.size) {
        error = what() + " expects size " + std::to_string(dim.size) + where() +
                " (shape " + shapeString(param.shape) + "), got " +
                std::to_string(actual) + " (shape " +
                shapeString(array.shape) + ")";
        return false;
      }
      continue;
    }
    int64_t bound = bindings.lookup(dim.symbol);
    if (bound < 0) {
      bindings.symbols[dim.symbol] = actual;
      continue;
    }
    if (bound != actual) {
      error = what() + " has size " + std::to_string(actual) + where() +
              " but '" + dim.symbol + "' is " + std::to_string(bound) +
              " (set by '" +
              originOf(signature, index, dim.symbol, batchSizeGiven) + "')";
      return false;
    }
  }
  return true;
}

bool bindArguments(const Signature &signature,
                   const std::vector<ArrayDesc> &arguments,
                   std::optional<int64_t> batchSize, Bindings &bindings,
                   std::string &error) {
  unsigned numArgs = signature.numArguments();
  if (arguments.size() != numArgs) {
    error = "'" + signature.name + "' takes " + std::to_string(numArgs) +
            " arguments, got " + std::to_string(arguments.size());
    return false;
  }
  if (batchSize) {
    if (*batchSize < 0) {
      error = "batch size must not be negative, got " +
              std::to_string(*batchSize);
      return false;
    }
    bindings.symbols["B"] = *batchSize;
  }
  for (unsigned i = 0; i < numArgs; ++i)
    if (!bindOne(signature, i, arguments[i], batchSize.has_value(), bindings,
                 error))
      return false;
  for (unsigned i = numArgs; i < signature.params.size(); ++i)
    for (const Dim &dim : signature.params[i].shape)
      if (!dim.isStatic() && bindings.lookup(dim.symbol) < 0) {
        error = "the size '" + dim.symbol + "' of result '" +
                signature.params[i].name +
                "' is not determined by the arguments" +
                (dim.symbol == "B" ? "; pass a batch size" : "");
        return false;
      }
  return true;
}

bool checkResults(const Signature &signature, const Bindings &bindings,
                  const std::vector<ArrayDesc> &results, std::string &error) {
  unsigned numArgs = signature.numArguments();
  if (results.size() != signature.numResults()) {
    error = "'" + signature.name + "' returns " +
            std::to_string(signature.numResults()) + " results, got " +
            std::to_string(results.size()) + " output arrays";
    return false;
  }
  for (unsigned i = 0; i < results.size(); ++i) {
    const Parameter &param = signature.params[numArgs + i];
    std::vector<int64_t> expected = bindings.shapeOf(param);
    if (results[i].dtype != param.dtype) {
      error = "result '" + param.name + "' expects dtype " +
              dtypeName(param.dtype) + ", got " + dtypeName(results[i].dtype);
      return false;
    }
    if (results[i].shape != expected) {
      error = "result '" + param.name + "' expects shape " +
              shapeString(expected) + ", got " +
              shapeString(results[i].shape);
      return false;
    }
  }
  return true;
}

bool checkIndexRange(const Signature &signature, const Bindings &bindings,
                     unsigned paramIndex, const void *data,
                     std::string &error) {
  const Parameter &param = signature.params[paramIndex];
  if (param.role != ParamRole::Indices || param.indexedTables.empty())
    return true;
  int64_t count = bindings.shapeOf(param)[0];
  for (unsigned tableIndex : param.indexedTables) {
    const Parameter &table = signature.params[tableIndex];
    int64_t rows = bindings.shapeOf(table)[param.indexedDim];
    const char *unit = param.indexedDim == 0 ? " rows" : " columns";
    for (int64_t i = 0; i < count; ++i) {
      int64_t index = param.dtype == DType::I32
                          ? static_cast<const int32_t *>(data)[i]
                          : static_cast<const int64_t *>(data)[i];
      if (index < 0 || index >= rows) {
        error = "index " + std::to_string(index) + " at position " +
                std::to_string(i) + " of '" + param.name +
                "' is out of range for " + roleName(table.role) + " '" +
                table.name + "' with " + std::to_string(rows) + unit;
        return false;
      }
    }
  }
  return true;
}

} // namespace kge_runtime
