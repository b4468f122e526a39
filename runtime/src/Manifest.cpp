//===- Manifest.cpp - parsing and validating bundle manifests -------------===//

#include "kge/runtime/Manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace kge_runtime {

using json = nlohmann::json;

const std::vector<std::string> &deviceLibraryFunctions() {
  static const std::vector<std::string> functions = {
      "kge_inspect_unique", "kge_inspect_frequent", "kge_sort_groups",
      "kge_key_histogram",  "kge_key_scan",         "kge_key_scatter",
      "kge_key_scan_tiles",
      "kge_check_indices",  "kge_transpose_32"};
  return functions;
}

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw BundleError("invalid bundle: " + message);
}

const json &field(const json &object, const char *name,
                  const std::string &where) {
  if (!object.is_object())
    fail("'" + where + "' must be an object");
  auto it = object.find(name);
  if (it == object.end())
    fail("'" + where + "' has no '" + name + "'");
  return *it;
}

std::string string(const json &object, const char *name,
                   const std::string &where) {
  const json &value = field(object, name, where);
  if (!value.is_string())
    fail("'" + where + "." + name + "' must be a string");
  return value.get<std::string>();
}

const json &array(const json &object, const char *name,
                  const std::string &where) {
  const json &value = field(object, name, where);
  if (!value.is_array())
    fail("'" + where + "." + name + "' must be an array");
  return value;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) ||
                        name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string decodeBase64(const std::string &text, const std::string &where) {
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : text) {
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding)
      fail("'" + where + "' is not valid base64 (data after padding)");
    size_t value = alphabet.find(c);
    if (value == std::string::npos)
      fail("'" + where + "' is not valid base64");
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (text.size() % 4 != 0 || padding > 2)
    fail("'" + where + "' is not valid base64 (bad length)");
  return out;
}

/// Parses expressions and records the sizes they use.
class ExpressionReader {
public:
  explicit ExpressionReader(const std::set<std::string> &known)
      : known(known) {}

  ExpressionPtr read(const json &value, const std::string &where) {
    std::string text;
    if (value.is_number_integer())
      text = std::to_string(value.get<int64_t>());
    else if (value.is_string())
      text = value.get<std::string>();
    else
      fail("'" + where + "' must be a size expression (string or integer)");
    std::string error;
    ExpressionPtr e = Expression::parse(text, error);
    if (!e)
      fail("'" + where + "': " + error);
    std::set<std::string> used;
    e->collectSymbols(used);
    for (const std::string &symbol : used)
      if (!known.count(symbol))
        fail("'" + where + "' uses the size '" + symbol +
             "', which no parameter defines");
    return e;
  }

private:
  const std::set<std::string> &known;
};

Signature parseSignature(const json &function) {
  Signature signature;
  signature.name = string(function, "name", "function");
  const json &params = array(function, "params", "function");
  if (params.empty())
    fail("'function.params' is empty");
  std::map<std::string, int> byName;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string where = "function.params[" + std::to_string(i) + "]";
    const json &p = params[i];
    Parameter param;
    param.name = string(p, "name", where);
    if (!isIdentifier(param.name))
      fail("'" + where + ".name' must be an identifier, got '" + param.name +
           "'");
    if (!byName.emplace(param.name, static_cast<int>(i)).second)
      fail("parameter name '" + param.name + "' is used twice");
    std::string role = string(p, "role", where);
    if (role == "table")
      param.role = ParamRole::Table;
    else if (role == "indices")
      param.role = ParamRole::Indices;
    else if (role == "result")
      param.role = ParamRole::Result;
    else if (role == "output")
      param.role = ParamRole::Output;
    else
      fail("'" + where +
           ".role' must be table, indices, result or output, got '" + role +
           "'");
    std::string dtype = string(p, "dtype", where);
    std::optional<DType> parsed = parseDType(dtype);
    if (!parsed)
      fail("'" + where + ".dtype' is not a known dtype: '" + dtype + "'");
    param.dtype = *parsed;
    const json &shape = array(p, "shape", where);
    if (shape.empty() || shape.size() > 4)
      fail("'" + where + ".shape' must have 1 to 4 dimensions");
    for (const json &d : shape) {
      if (d.is_number_integer() && d.get<int64_t>() >= 0)
        param.shape.push_back(Dim::fixed(d.get<int64_t>()));
      else if (d.is_string() && isIdentifier(d.get<std::string>()))
        param.shape.push_back(Dim::named(d.get<std::string>()));
      else
        fail("'" + where +
             ".shape' entries must be non-negative integers or size names");
    }
    signature.params.push_back(std::move(param));
  }
  // Arguments come before results; index arrays name their tables.
  bool seenResult = false, seenOutput = false;
  for (size_t i = 0; i < params.size(); ++i) {
    Parameter &param = signature.params[i];
    seenOutput |= param.role == ParamRole::Output;
    if (param.role == ParamRole::Result)
      seenResult = true;
    else if (seenResult)
      fail("argument '" + param.name + "' follows a result");
    if (param.role != ParamRole::Indices)
      continue;
    if (param.dtype != DType::I32 && param.dtype != DType::I64)
      fail("index array '" + param.name + "' must be i32 or i64");
    auto indexes = params[i].find("indexes");
    if (indexes == params[i].end())
      continue;
    if (!indexes->is_array())
      fail("'indexes' of '" + param.name + "' must be an array");
    for (const json &table : *indexes) {
      auto it = table.is_string() ? byName.find(table.get<std::string>())
                                  : byName.end();
      // Tables are gathered from; outputs and results are written at the
      // indexed rows (a graph's messages summed into their nodes).
      if (it == byName.end() ||
          (signature.params[it->second].role != ParamRole::Table &&
           signature.params[it->second].role != ParamRole::Output &&
           signature.params[it->second].role != ParamRole::Result))
        fail("index array '" + param.name + "' indexes something that is "
             "not a table, an output or a result");
      param.indexedTables.push_back(static_cast<unsigned>(it->second));
    }
    auto dim = params[i].find("indexed_dim");
    if (dim != params[i].end()) {
      if (!dim->is_number_integer() || dim->get<int64_t>() < 0 ||
          dim->get<int64_t>() > 1)
        fail("'indexed_dim' of '" + param.name + "' must be 0 or 1");
      param.indexedDim = dim->get<unsigned>();
      for (unsigned table : param.indexedTables)
        if (signature.params[table].shape.size() <= param.indexedDim)
          fail("index array '" + param.name + "' indexes dimension " +
               std::to_string(param.indexedDim) + " of '" +
               signature.params[table].name + "', which has rank " +
               std::to_string(signature.params[table].shape.size()));
    }
  }
  if (!seenResult && !seenOutput)
    fail("the function has no result and no output");
  return signature;
}

} // namespace

Manifest Manifest::parse(const std::string &text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &e) {
    // The parser quotes everything it read of the offending token: a
    // truncated bundle would quote megabytes of base64.
    std::string message = e.what();
    size_t quoted = message.find("; last read: '");
    if (quoted != std::string::npos && message.size() - quoted > 100)
      message = message.substr(0, quoted + 60) + "...'";
    throw BundleError("the bundle is not valid JSON: " + message);
  }
  if (!root.is_object())
    fail("the top level must be an object");
  if (string(root, "format", "bundle") != "kge-bundle")
    fail("'format' must be \"kge-bundle\"");
  const json &version = field(root, "version", "bundle");
  if (!version.is_number_integer())
    fail("'version' must be an integer");
  Manifest m;
  m.version = version.get<int>();
  if (m.version != kSupportedBundleVersion)
    throw BundleError("bundle version " + std::to_string(m.version) +
                      " is not supported: this runtime reads version " +
                      std::to_string(kSupportedBundleVersion));

  const json &target = field(root, "target", "bundle");
  m.chip = string(target, "chip", "target");
  m.features = string(target, "features", "target");
  m.signature = parseSignature(field(root, "function", "bundle"));

  const json &mode = field(root, "mode", "bundle");
  std::string kind = string(mode, "kind", "mode");
  if (kind == "negative") {
    m.corrupted = string(mode, "corrupted", "mode");
    int index = m.signature.find(m.corrupted);
    if (index < 0 ||
        m.signature.params[index].role != ParamRole::Indices)
      fail("'mode.corrupted' must name an index array");
  } else if (kind != "positive") {
    fail("'mode.kind' must be positive or negative, got '" + kind + "'");
  }

  // Sizes the expressions may use: those of the signature.
  std::set<std::string> known;
  for (const Parameter &p : m.signature.params)
    for (const Dim &d : p.shape)
      if (!d.isStatic())
        known.insert(d.symbol);
  ExpressionReader expressions(known);

  std::set<std::string> moduleNames;
  const json &modules = array(root, "modules", "bundle");
  if (modules.empty())
    fail("'modules' is empty");
  for (size_t i = 0; i < modules.size(); ++i) {
    std::string where = "modules[" + std::to_string(i) + "]";
    ModuleImage image;
    image.name = string(modules[i], "name", where);
    if (image.name == "library" || !moduleNames.insert(image.name).second)
      fail("module name '" + image.name + "' is reserved or used twice");
    image.ptx = string(modules[i], "ptx", where);
    if (image.ptx.find(".entry") == std::string::npos)
      fail("'" + where + ".ptx' holds no kernel entry");
    auto cubin = modules[i].find("cubin_base64");
    if (cubin != modules[i].end()) {
      if (!cubin->is_string())
        fail("'" + where + ".cubin_base64' must be a string");
      image.cubin = decodeBase64(cubin->get<std::string>(),
                                 where + ".cubin_base64");
    }
    m.modules.push_back(std::move(image));
  }

  for (const json &name : array(root, "library", "bundle")) {
    if (!name.is_string())
      fail("'library' entries must be strings");
    const auto &provided = deviceLibraryFunctions();
    if (std::find(provided.begin(), provided.end(), name.get<std::string>()) ==
        provided.end())
      throw BundleError("the bundle needs the device-library function '" +
                        name.get<std::string>() +
                        "', which this runtime does not provide");
    m.library.push_back(name.get<std::string>());
  }

  const json &scratch = array(root, "scratch", "bundle");
  for (size_t i = 0; i < scratch.size(); ++i) {
    std::string where = "scratch[" + std::to_string(i) + "]";
    ScratchBuffer buffer;
    buffer.name = string(scratch[i], "name", where);
    for (const ScratchBuffer &other : m.scratch)
      if (other.name == buffer.name)
        fail("scratch buffer '" + buffer.name + "' is declared twice");
    std::optional<DType> dtype =
        parseDType(string(scratch[i], "dtype", where));
    if (!dtype)
      fail("'" + where + ".dtype' is not a known dtype");
    buffer.dtype = *dtype;
    buffer.count = expressions.read(field(scratch[i], "count", where),
                                    where + ".count");
    m.scratch.push_back(std::move(buffer));
  }

  auto readBuffer = [&](const json &object, const std::string &where) {
    std::string text = string(object, "buffer", where);
    BufferRef ref;
    if (text.rfind("param:", 0) == 0) {
      ref.kind = BufferRef::Kind::Param;
      ref.name = text.substr(6);
      ref.index = m.signature.find(ref.name);
    } else if (text.rfind("scratch:", 0) == 0) {
      ref.kind = BufferRef::Kind::Scratch;
      ref.name = text.substr(8);
      for (size_t s = 0; s < m.scratch.size(); ++s)
        if (m.scratch[s].name == ref.name)
          ref.index = static_cast<int>(s);
    }
    if (ref.index < 0)
      fail("'" + where + ".buffer' refers to no parameter or scratch "
           "buffer: '" + text + "'");
    return ref;
  };

  const json &launches = array(root, "launches", "bundle");
  bool anyBundleKernel = false;
  for (size_t i = 0; i < launches.size(); ++i) {
    std::string where = "launches[" + std::to_string(i) + "]";
    const json &l = launches[i];
    LaunchStep step;
    std::string kindText = string(l, "kind", where);
    if (l.contains("when"))
      step.when = expressions.read(l["when"], where + ".when");
    if (kindText == "memset") {
      step.kind = LaunchStep::Kind::Memset;
      if (l.contains("dependent"))
        fail("'" + where + ".dependent' applies to kernel steps only");
      step.buffer = readBuffer(l, where);
      if (step.buffer.kind != BufferRef::Kind::Scratch &&
          (step.buffer.kind != BufferRef::Kind::Param ||
           m.signature.params[step.buffer.index].role != ParamRole::Result))
        fail("'" + where + "' may only clear scratch buffers and results");
      if (l.contains("value")) {
        // A 32-bit word written to every element (-inf, say).
        const json &value = l["value"];
        DType dtype = step.buffer.kind == BufferRef::Kind::Param
                          ? m.signature.params[step.buffer.index].dtype
                          : m.scratch[step.buffer.index].dtype;
        if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
            value.get<int64_t>() > 0xffffffffll)
          fail("'" + where + ".value' must be a 32-bit word (0 to 4294967295)");
        if (dtypeSize(dtype) != 4)
          fail("'" + where + ".value' fills 32-bit elements; the buffer holds " +
               dtypeName(dtype));
        step.value = static_cast<uint32_t>(value.get<int64_t>());
      }
      m.launches.push_back(std::move(step));
      continue;
    }
    if (kindText != "kernel")
      fail("'" + where + ".kind' must be memset or kernel");
    step.function = string(l, "function", where);
    step.module = string(l, "module", where);
    const ModuleImage *image = nullptr;
    if (step.module == "library") {
      if (std::find(m.library.begin(), m.library.end(), step.function) ==
          m.library.end())
        fail("'" + where + "' launches library kernel '" + step.function +
             "' that 'library' does not list");
    } else if (!moduleNames.count(step.module)) {
      fail("'" + where + ".module' names no module: '" + step.module + "'");
    } else {
      // The kernel must be an entry of its module's PTX (checked again by
      // the driver when the module is loaded).
      for (const ModuleImage &candidate : m.modules)
        if (candidate.name == step.module)
          image = &candidate;
      if (image->ptx.find(".entry " + step.function + "(") ==
          std::string::npos)
        fail("'" + where + "' launches '" + step.function +
             "', which is not a kernel of module '" + step.module + "'");
      anyBundleKernel = true;
    }
    const json &grid = array(l, "grid", where), &block = array(l, "block", where);
    if (grid.size() != 3 || block.size() != 3)
      fail("'" + where + "' needs 3 grid and 3 block dimensions");
    for (int d = 0; d < 3; ++d) {
      step.grid[d] = expressions.read(grid[d], where + ".grid");
      step.block[d] = expressions.read(block[d], where + ".block");
    }
    step.sharedBytes =
        expressions.read(field(l, "shared_bytes", where), where + ".shared_bytes");
    if (l.contains("dependent")) {
      if (!l["dependent"].is_boolean())
        fail("'" + where + ".dependent' must be a boolean");
      step.dependent = l["dependent"].get<bool>();
      // Library kernels do not wait for the work before them; a bundle
      // kernel launched as dependent must (or it would read memory the
      // previous kernel is still writing).
      if (step.dependent && step.module == "library")
        fail("'" + where + "' launches library kernel '" + step.function +
             "' as dependent; library kernels run in stream order");
      if (step.dependent &&
          image->ptx.find("griddepcontrol.wait") == std::string::npos)
        fail("'" + where + "' launches '" + step.function +
             "' as dependent, but module '" + step.module +
             "' does not wait for prior grids (griddepcontrol.wait)");
    }
    const json &args = array(l, "args", where);
    for (size_t a = 0; a < args.size(); ++a) {
      std::string argWhere = where + ".args[" + std::to_string(a) + "]";
      KernelArg arg;
      std::string argKind = string(args[a], "kind", argWhere);
      if (argKind == "memref" || argKind == "pointer") {
        arg.kind = argKind == "memref" ? KernelArg::Kind::Memref
                                       : KernelArg::Kind::Pointer;
        arg.buffer = readBuffer(args[a], argWhere);
        if (arg.kind == KernelArg::Kind::Memref) {
          const json &shape = array(args[a], "shape", argWhere);
          // A view of a parameter may flatten leading dimensions (B * K
          // rows), never add; a scratch buffer is flat memory of the plan's
          // (any shape, checked against its size at the call).
          size_t rank = arg.buffer.kind == BufferRef::Kind::Param
                            ? m.signature.params[arg.buffer.index].shape.size()
                            : 8;
          if (shape.empty() || shape.size() > rank)
            fail("'" + argWhere + ".shape' has " +
                 std::to_string(shape.size()) + " dimensions for a buffer of " +
                 std::to_string(rank));
          for (const json &d : shape)
            arg.shape.push_back(expressions.read(d, argWhere + ".shape"));
        }
      } else if (argKind == "tensormap") {
        arg.kind = KernelArg::Kind::TensorMap;
        arg.buffer = readBuffer(args[a], argWhere);
        DType dtype;
        if (arg.buffer.kind == BufferRef::Kind::Scratch) {
          // A scratch buffer viewed as a row-major matrix of `shape`.
          const json &shape = array(args[a], "shape", argWhere);
          if (shape.size() != 2)
            fail("'" + argWhere + ".shape' of a scratch tensor map must be "
                 "two extents (rows, columns)");
          for (const json &d : shape)
            arg.shape.push_back(expressions.read(d, argWhere + ".shape"));
          dtype = m.scratch[arg.buffer.index].dtype;
        } else {
          if (m.signature.params[arg.buffer.index].shape.size() != 2 ||
              arg.buffer.index >= static_cast<int>(m.signature.numArguments()))
            fail("'" + argWhere + "' describes a tensor map of a buffer that "
                 "is not a 2-D argument or a scratch buffer");
          dtype = m.signature.params[arg.buffer.index].dtype;
        }
        size_t size = dtypeSize(dtype);
        const json &box = array(args[a], "box", argWhere);
        if (box.size() != 2 || !box[0].is_number_integer() ||
            !box[1].is_number_integer())
          fail("'" + argWhere + ".box' must be two integers (rows, columns)");
        arg.box[0] = box[0].get<int64_t>();
        arg.box[1] = box[1].get<int64_t>();
        if (arg.box[0] < 1 || arg.box[0] > 256 || arg.box[1] < 1 ||
            arg.box[1] > 256 || arg.box[1] * static_cast<int64_t>(size) > 128 ||
            (dtype != DType::F16 && dtype != DType::BF16 &&
             dtype != DType::F32))
          fail("'" + argWhere + ".box' must have 1 to 256 rows of at most "
               "128 bytes of f16, bf16 or f32");
      } else if (argKind == "i32" || argKind == "i64") {
        arg.kind = argKind == "i32" ? KernelArg::Kind::I32 : KernelArg::Kind::I64;
        arg.value = expressions.read(field(args[a], "value", argWhere),
                                     argWhere + ".value");
      } else {
        fail("'" + argWhere +
             ".kind' must be memref, pointer, tensormap, i32 or i64");
      }
      step.args.push_back(std::move(arg));
    }
    m.launches.push_back(std::move(step));
  }
  if (!anyBundleKernel)
    fail("'launches' runs no kernel of the bundle's modules");

  const json &checks = array(root, "checks", "bundle");
  for (size_t i = 0; i < checks.size(); ++i) {
    std::string where = "checks[" + std::to_string(i) + "]";
    IndexCheck check;
    std::string param = string(checks[i], "param", where);
    check.param = m.signature.find(param);
    if (check.param < 0 ||
        m.signature.params[check.param].role != ParamRole::Indices)
      fail("'" + where + ".param' must name an index array");
    check.bound = expressions.read(field(checks[i], "bound", where),
                                   where + ".bound");
    check.count = expressions.read(field(checks[i], "count", where),
                                   where + ".count");
    m.checks.push_back(std::move(check));
  }
  return m;
}

} // namespace kge_runtime
