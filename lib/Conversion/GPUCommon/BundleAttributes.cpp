//===- BundleAttributes.cpp - a lowered module's bundle description -------===//

#include "Conversion/GPUCommon/BundleAttributes.h"

using namespace mlir;
using namespace mlir::kge;

Attribute
BundleBuilder::dict(ArrayRef<std::pair<StringRef, Attribute>> entries) {
  SmallVector<NamedAttribute> attrs;
  for (auto &[name, value] : entries)
    attrs.push_back(b.getNamedAttr(name, value));
  return b.getDictionaryAttr(attrs);
}

Attribute BundleBuilder::dims(ArrayRef<std::string> shape) {
  SmallVector<Attribute> values;
  for (const std::string &d : shape)
    values.push_back(str(d));
  return arr(values);
}

Attribute BundleBuilder::signature(const kge_runtime::Signature &signature) {
  SmallVector<Attribute> params;
  for (const kge_runtime::Parameter &p : signature.params) {
    // Static sizes are numbers, symbolic sizes their names.
    SmallVector<Attribute> shape;
    for (const kge_runtime::Dim &d : p.shape)
      shape.push_back(d.isStatic() ? num(d.size) : str(d.symbol));
    SmallVector<std::pair<StringRef, Attribute>> entries{
        {"name", str(p.name)},
        {"role", str(kge_runtime::roleName(p.role))},
        {"dtype", str(kge_runtime::dtypeName(p.dtype))},
        {"shape", arr(shape)}};
    if (p.role == kge_runtime::ParamRole::Indices) {
      SmallVector<Attribute> indexes;
      for (unsigned t : p.indexedTables)
        indexes.push_back(str(signature.params[t].name));
      entries.push_back({"indexes", arr(indexes)});
      if (p.indexedDim != 0)
        entries.push_back({"indexed_dim", num(p.indexedDim)});
    }
    params.push_back(dict(entries));
  }
  return dict({{"name", str(signature.name)}, {"params", arr(params)}});
}

Attribute BundleBuilder::pointer(StringRef buffer) {
  return dict({{"kind", str("pointer")}, {"buffer", str(buffer)}});
}

Attribute BundleBuilder::memref(StringRef buffer,
                                ArrayRef<std::string> shape) {
  return dict(
      {{"kind", str("memref")}, {"buffer", str(buffer)}, {"shape", dims(shape)}});
}

Attribute BundleBuilder::scalar(StringRef kind, Attribute value) {
  return dict({{"kind", str(kind)}, {"value", value}});
}

Attribute BundleBuilder::launch(StringRef function, StringRef module,
                                ArrayRef<std::string> grid, int64_t block,
                                StringRef sharedBytes,
                                ArrayRef<Attribute> args) {
  return dict({{"kind", str("kernel")},
               {"function", str(function)},
               {"module", str(module)},
               {"grid", dims(grid)},
               {"block", dims({std::to_string(block), "1", "1"})},
               {"shared_bytes", str(sharedBytes)},
               {"args", arr(args)}});
}

void BundleBuilder::appendCountingSort(
    SmallVectorImpl<Attribute> &scratch, SmallVectorImpl<Attribute> &steps,
    StringRef keyBuffer, unsigned keyBits, StringRef count, StringRef keys,
    StringRef permBuffer, llvm::function_ref<Attribute(Attribute)> wrap,
    StringRef runLengths, ArrayRef<Attribute> scans) {
  constexpr int64_t kSortPrivateKeys = 8192, kSortChunk = 2048;
  std::string n = count.str(), k = keys.str();
  // `globally` is 0 or 1 and picks the grid and shared memory.
  std::string globally =
      "min(1, " + k + " / " + std::to_string(kSortPrivateKeys + 1) + ")";
  std::string privately = "(1 - " + globally + ")";
  std::string sortGrid = "ceildiv(" + n + ", " + std::to_string(kSortChunk) +
                         ") * " + privately + " + ceildiv(" + n +
                         ", 256) * " + globally;
  std::string counterBytes = "4 * ceildiv(" + k + ", 2)";
  std::string histogramBytes = counterBytes + " * " + privately;
  std::string scatterBytes = "(16 * ceildiv(" + k + ", 8) + " +
                             std::to_string(8 * kSortChunk) + ") * " +
                             privately;
  scratch.push_back(dict({{"name", str("counts")},
                          {"dtype", str("i32")},
                          {"count", str(k)}}));
  Attribute bits = str(std::to_string(keyBits));
  auto histogram = [&](StringRef buffer) {
    steps.push_back(wrap(dict({{"kind", str("memset")}, {"buffer", str(buffer)}})));
    steps.push_back(wrap(launch(
        "kge_key_histogram", "library", {sortGrid, "1", "1"}, 256,
        histogramBytes,
        {pointer(keyBuffer), scalar("i32", bits), scalar("i64", str(n)),
         scalar("i64", str(k)), pointer(buffer)})));
  };
  histogram("scratch:counts");
  if (!runLengths.empty())
    scratch.push_back(dict({{"name", str(runLengths)},
                            {"dtype", str("i32")},
                            {"count", str(k)}}));
  assert(runLengths.empty() == scans.empty() &&
         "the run lengths are written by the given scans");
  if (!scans.empty()) {
    for (Attribute scan : scans)
      steps.push_back(wrap(scan));
  } else {
    steps.push_back(wrap(launch(
        "kge_key_scan", "library", {"1", "1", "1"}, 1024, "0",
        {pointer("scratch:counts"), scalar("i64", str(k))})));
  }
  steps.push_back(wrap(launch(
      "kge_key_scatter", "library", {sortGrid, "1", "1"}, 256, scatterBytes,
      {pointer(keyBuffer), scalar("i32", bits), scalar("i64", str(n)),
       scalar("i64", str(k)), pointer("scratch:counts"),
       pointer(permBuffer)})));
}

/// `combine` ("min" or "max") of one dimension of every table the index
/// array `param` reads (the last one when `dim` is negative).
static std::string overTables(const kge_runtime::Signature &signature,
                              const kge_runtime::Parameter &param, int dim,
                              StringRef combine) {
  std::string result;
  for (unsigned t : param.indexedTables) {
    const auto &shape = signature.params[t].shape;
    std::string size = (dim < 0 ? shape.back() : shape[dim]).str();
    result = result.empty() ? size
                            : (combine + "(" + result + ", " + size + ")").str();
  }
  return result;
}

std::string mlir::kge::indexRange(const kge_runtime::Signature &signature,
                                  const kge_runtime::Parameter &param) {
  return overTables(signature, param, param.indexedDim, "min");
}

std::string mlir::kge::rowLength(const kge_runtime::Signature &signature,
                                 const kge_runtime::Parameter &param) {
  return overTables(signature, param, /*dim=*/-1, "max");
}
