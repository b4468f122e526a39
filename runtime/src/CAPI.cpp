//===- CAPI.cpp - C API of the KGE runtime --------------------------------===//
//
// Thin wrappers over the C++ runtime: every exception becomes a status and
// a per-thread message; handles own shared pointers to the C++ objects.
//
//===----------------------------------------------------------------------===//

#include "kge-c/Runtime.h"

#include "kge/runtime/Error.h"
#include "kge/runtime/Runtime.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

using namespace kge_runtime;

struct kgertManifest_ {
  std::shared_ptr<const Manifest> manifest;
};

struct kgertProgram_ {
  std::shared_ptr<Program> program;
  kgertManifest_ manifest;
};

namespace {

thread_local std::string lastError;

kgertStatus fail(kgertStatus status, std::string message) {
  lastError = std::move(message);
  return status;
}

kgertStatus succeed() {
  lastError.clear();
  return KGERT_SUCCESS;
}

/// Runs `body`, mapping the runtime's exceptions to statuses.
template <typename Body>
kgertStatus guarded(Body &&body) {
  try {
    body();
    return succeed();
  } catch (const BundleError &e) {
    return fail(KGERT_ERROR_BUNDLE, e.what());
  } catch (const ArgumentError &e) {
    return fail(KGERT_ERROR_ARGUMENT, e.what());
  } catch (const IndexRangeError &e) {
    return fail(KGERT_ERROR_INDEX_RANGE, e.what());
  } catch (const CudaError &e) {
    return fail(KGERT_ERROR_CUDA, e.what());
  } catch (const std::bad_alloc &) {
    return fail(KGERT_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception &e) {
    return fail(KGERT_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(KGERT_ERROR_INTERNAL, "unknown error");
  }
}

bool toDType(int32_t dtype, DType &out) {
  switch (dtype) {
  case KGERT_F16: out = DType::F16; return true;
  case KGERT_BF16: out = DType::BF16; return true;
  case KGERT_F32: out = DType::F32; return true;
  case KGERT_F64: out = DType::F64; return true;
  case KGERT_I32: out = DType::I32; return true;
  case KGERT_I64: out = DType::I64; return true;
  }
  return false;
}

kgertDType fromDType(DType dtype) {
  switch (dtype) {
  case DType::F16: return KGERT_F16;
  case DType::BF16: return KGERT_BF16;
  case DType::F32: return KGERT_F32;
  case DType::F64: return KGERT_F64;
  case DType::I32: return KGERT_I32;
  case DType::I64: return KGERT_I64;
  }
  return KGERT_F32;
}

kgertRole fromRole(ParamRole role) {
  switch (role) {
  case ParamRole::Table: return KGERT_TABLE;
  case ParamRole::Indices: return KGERT_INDICES;
  case ParamRole::Result: return KGERT_RESULT;
  case ParamRole::Output: return KGERT_OUTPUT;
  }
  return KGERT_TABLE;
}

/// The C arrays as runtime arrays; throws ArgumentError for a malformed
/// description (`what` names the list: "argument", "result").
std::vector<DeviceArray> toArrays(const kgertArray *arrays, size_t count,
                                  const char *what) {
  if (count && !arrays)
    throw ArgumentError(std::string("the ") + what + " list is NULL but " +
                        std::to_string(count) + " " + what +
                        "s were announced");
  std::vector<DeviceArray> out(count);
  for (size_t i = 0; i < count; ++i) {
    const kgertArray &a = arrays[i];
    std::string name = std::string(what) + " " + std::to_string(i);
    if (!toDType(a.dtype, out[i].dtype))
      throw ArgumentError(name + ": unknown dtype code " +
                          std::to_string(a.dtype));
    if (a.rank < 0 || a.rank > 8)
      throw ArgumentError(name + ": rank " + std::to_string(a.rank) +
                          " is outside 0..8");
    if (a.rank && !a.shape)
      throw ArgumentError(name + ": rank " + std::to_string(a.rank) +
                          " but no shape");
    out[i].data = a.data;
    out[i].shape.assign(a.shape, a.shape + a.rank);
    if (a.strides)
      out[i].strides.assign(a.strides, a.strides + a.rank);
    out[i].device = a.device;
  }
  return out;
}

std::optional<int64_t> batchOf(int64_t batchSize) {
  if (batchSize < 0)
    return std::nullopt;
  return batchSize;
}

} // namespace

extern "C" {

int kgertGetApiVersion(void) { return KGERT_API_VERSION; }

kgertStatus kgertCheckApiVersion(int headerVersion) {
  if (headerVersion != KGERT_API_VERSION)
    return fail(KGERT_ERROR_VERSION,
                "the caller was built for version " +
                    std::to_string(headerVersion) +
                    " of the KGE runtime C API, but the loaded library "
                    "implements version " +
                    std::to_string(KGERT_API_VERSION));
  return succeed();
}

const char *kgertGetLastError(void) { return lastError.c_str(); }

const char *kgertDTypeName(int32_t dtype) {
  DType d;
  return toDType(dtype, d) ? dtypeName(d) : nullptr;
}

kgertStatus kgertManifestParse(const char *text, size_t length,
                               kgertManifest *manifest) {
  if (!manifest)
    return fail(KGERT_ERROR_ARGUMENT, "kgertManifestParse: manifest is NULL");
  *manifest = nullptr;
  if (!text)
    return fail(KGERT_ERROR_ARGUMENT, "kgertManifestParse: text is NULL");
  return guarded([&] {
    auto parsed =
        std::make_shared<const Manifest>(Manifest::parse(std::string(text, length)));
    *manifest = new kgertManifest_{std::move(parsed)};
  });
}

void kgertManifestDestroy(kgertManifest manifest) { delete manifest; }

const char *kgertManifestGetFunctionName(kgertManifest manifest) {
  return manifest ? manifest->manifest->signature.name.c_str() : nullptr;
}

const char *kgertManifestGetChip(kgertManifest manifest) {
  return manifest ? manifest->manifest->chip.c_str() : nullptr;
}

size_t kgertManifestGetNumParams(kgertManifest manifest) {
  return manifest ? manifest->manifest->signature.params.size() : 0;
}

size_t kgertManifestGetNumArguments(kgertManifest manifest) {
  return manifest ? manifest->manifest->signature.numArguments() : 0;
}

kgertStatus kgertManifestGetParam(kgertManifest manifest, size_t position,
                                  kgertParamInfo *info) {
  if (!manifest || !info)
    return fail(KGERT_ERROR_ARGUMENT,
                "kgertManifestGetParam: manifest or info is NULL");
  const auto &params = manifest->manifest->signature.params;
  if (position >= params.size())
    return fail(KGERT_ERROR_ARGUMENT,
                "parameter " + std::to_string(position) + " of '" +
                    manifest->manifest->signature.name + "': it has " +
                    std::to_string(params.size()) + " parameters");
  const Parameter &param = params[position];
  info->name = param.name.c_str();
  info->role = fromRole(param.role);
  info->dtype = fromDType(param.dtype);
  info->rank = static_cast<int32_t>(param.shape.size());
  return succeed();
}

kgertStatus kgertManifestGetResultShape(kgertManifest manifest,
                                        const kgertArray *arguments,
                                        size_t numArguments, int64_t batchSize,
                                        size_t result, int64_t *shape,
                                        size_t capacity, int32_t *rank) {
  if (!manifest || !rank)
    return fail(KGERT_ERROR_ARGUMENT,
                "kgertManifestGetResultShape: manifest or rank is NULL");
  return guarded([&] {
    const Signature &signature = manifest->manifest->signature;
    if (result >= signature.numResults())
      throw ArgumentError("result " + std::to_string(result) + " of '" +
                          signature.name + "': it has " +
                          std::to_string(signature.numResults()) + " results");
    std::vector<DeviceArray> arrays =
        toArrays(arguments, numArguments, "argument");
    std::vector<ArrayDesc> descs;
    for (const DeviceArray &a : arrays)
      descs.push_back({a.dtype, a.shape});
    Bindings bindings;
    std::string error;
    if (!bindArguments(signature, descs, batchOf(batchSize), bindings, error))
      throw ArgumentError(error);
    const Parameter &param = signature.params[signature.numArguments() + result];
    std::vector<int64_t> sizes = bindings.shapeOf(param);
    *rank = static_cast<int32_t>(sizes.size());
    if (sizes.size() > capacity || (!sizes.empty() && !shape))
      throw ArgumentError("the shape of " + param.describe() + " has " +
                          std::to_string(sizes.size()) +
                          " sizes but room was given for " +
                          std::to_string(shape ? capacity : 0));
    std::copy(sizes.begin(), sizes.end(), shape);
  });
}

kgertStatus kgertProgramLoad(const char *text, size_t length, int device,
                             kgertProgram *program) {
  if (!program)
    return fail(KGERT_ERROR_ARGUMENT, "kgertProgramLoad: program is NULL");
  *program = nullptr;
  if (!text)
    return fail(KGERT_ERROR_ARGUMENT, "kgertProgramLoad: text is NULL");
  return guarded([&] {
    std::shared_ptr<Program> loaded =
        Program::load(std::string(text, length), device);
    // The manifest handle shares the program's lifetime.
    std::shared_ptr<const Manifest> manifest(loaded, &loaded->manifest());
    *program = new kgertProgram_{loaded, kgertManifest_{std::move(manifest)}};
  });
}

void kgertProgramDestroy(kgertProgram program) { delete program; }

kgertManifest kgertProgramGetManifest(kgertProgram program) {
  return program ? &program->manifest : nullptr;
}

kgertStatus kgertProgramCall(kgertProgram program, const kgertArray *arguments,
                             size_t numArguments, const kgertArray *results,
                             size_t numResults,
                             const kgertCallOptions *options) {
  if (!program)
    return fail(KGERT_ERROR_ARGUMENT, "kgertProgramCall: program is NULL");
  return guarded([&] {
    CallOptions callOptions;
    if (options) {
      callOptions.stream = options->stream;
      callOptions.checked = options->checked != 0;
      callOptions.batchSize = batchOf(options->batchSize);
    }
    program->program->call(toArrays(arguments, numArguments, "argument"),
                           toArrays(results, numResults, "result"),
                           callOptions);
  });
}

int kgertGetDeviceCount(void) {
  try {
    return deviceCount();
  } catch (...) {
    return 0;
  }
}

} // extern "C"
