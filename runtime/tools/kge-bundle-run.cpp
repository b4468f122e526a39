//===- kge-bundle-run.cpp - run a kernel bundle on random inputs ----------===//
//
// Loads a bundle, fills its tables and index arrays with random data of the
// given sizes, runs it and prints a checksum of each result. Needs no
// framework, so that compute-sanitizer can check every kernel of a bundle
// quickly:
//
//   kge-bundle-run transe.kgebundle --size B=4096 --size N_Eemb=1000 ...
//   compute-sanitizer --tool racecheck kge-bundle-run a.kgebundle b.kgebundle
//
// Sizes not given default to B=1000, K=7, rows 500, lengths 100.
//
//===----------------------------------------------------------------------===//

#include "kge/runtime/Cuda.h"
#include "kge/runtime/Runtime.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

using namespace kge_runtime;

namespace {

/// `value` (finite, |value| <= 1) as an f16 or bf16 bit pattern, rounded
/// to nearest even.
static uint16_t encodeHalf(float value, DType dtype) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (dtype == DType::BF16)
    return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  uint32_t sign = (bits >> 16) & 0x8000;
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (exponent <= 0) {
    // Subnormal (or zero) in f16: shift the implicit bit in, round.
    if (exponent < -10)
      return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}


std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot open '" + path + "'");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int64_t defaultSize(const std::string &symbol) {
  if (symbol == "B")
    return 1000;
  if (symbol == "K")
    return 7;
  if (symbol.rfind("N_", 0) == 0)
    return 500;
  return 100;
}

struct Buffer {
  cuda::CUdeviceptr data = 0;
  size_t bytes = 0;
};

Buffer upload(const void *host, size_t bytes) {
  const cuda::Driver &d = cuda::driver();
  Buffer b;
  b.bytes = bytes;
  cuda::check(d.cuMemAlloc(&b.data, std::max<size_t>(bytes, 16)), "cuMemAlloc");
  cuda::check(d.cuMemcpyHtoDAsync(b.data, host, bytes, nullptr), "upload");
  return b;
}

int runBundle(const std::string &path, std::map<std::string, int64_t> sizes,
              bool checked, int repeat, unsigned seed) {
  std::string text = readFile(path);
  std::shared_ptr<Program> program = Program::load(text, 0);
  const Signature &signature = program->manifest().signature;
  for (const Parameter &p : signature.params)
    for (const Dim &d : p.shape)
      if (!d.isStatic() && !sizes.count(d.symbol))
        sizes[d.symbol] = defaultSize(d.symbol);

  std::mt19937_64 rng(seed);
  std::vector<Buffer> buffers;
  std::vector<DeviceArray> arguments, results;
  auto shapeOf = [&](const Parameter &p) {
    std::vector<int64_t> shape;
    for (const Dim &d : p.shape)
      shape.push_back(d.isStatic() ? d.size : sizes.at(d.symbol));
    return shape;
  };
  // n random integers in [lo, hi] of `dtype` (i32 or i64), on the device.
  auto uploadIntegers = [&](DType dtype, size_t n, int64_t lo, int64_t hi) {
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    if (dtype == DType::I32) {
      std::vector<int32_t> host(n);
      for (auto &v : host)
        v = static_cast<int32_t>(dist(rng));
      return upload(host.data(), n * 4);
    }
    std::vector<int64_t> host(n);
    for (auto &v : host)
      v = dist(rng);
    return upload(host.data(), n * 8);
  };
  for (const Parameter &p : signature.params) {
    std::vector<int64_t> shape = shapeOf(p);
    size_t n = 1;
    for (int64_t v : shape)
      n *= static_cast<size_t>(v);
    DeviceArray array;
    array.dtype = p.dtype;
    array.shape = shape;
    array.device = 0;
    if (p.role == ParamRole::Indices) {
      int64_t bound = INT64_MAX;
      for (unsigned t : p.indexedTables)
        bound = std::min(bound, shapeOf(signature.params[t])[p.indexedDim]);
      if (bound == INT64_MAX)
        bound = 1;
      buffers.push_back(uploadIntegers(p.dtype, n, 0, bound - 1));
    } else if (p.dtype == DType::F16 || p.dtype == DType::BF16) {
      // Tables in half precision: the same numbers, encoded.
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<uint16_t> host(n);
      for (auto &v : host)
        v = encodeHalf(dist(rng), p.dtype);
      buffers.push_back(upload(host.data(), n * 2));
    } else if (p.dtype == DType::F64) {
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      std::vector<double> host(n);
      for (auto &v : host)
        v = p.role == ParamRole::Result ? NAN : dist(rng);
      buffers.push_back(upload(host.data(), n * 8));
    } else if (p.dtype == DType::I32 || p.dtype == DType::I64) {
      // Integer arrays that index nothing (join keys, a select's
      // coordinates and count): small values.
      buffers.push_back(uploadIntegers(p.dtype, n, 0, 7));
    } else {
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      std::vector<float> host(n);
      // Results and outputs (written in place) start as NaN: what a call
      // leaves unwritten shows. (An aggregate's groups, which its task
      // reads and combines into, then stay NaN: their checksum says
      // nothing, the sanitizers' runs still cover their atomics.)
      for (auto &v : host)
        v = p.role == ParamRole::Result || p.role == ParamRole::Output
                ? NAN
                : dist(rng);
      buffers.push_back(upload(host.data(), n * 4));
    }
    array.data = buffers.back().data;
    (p.role == ParamRole::Result ? results : arguments).push_back(array);
  }

  CallOptions options;
  options.checked = checked;
  for (int i = 0; i < repeat; ++i)
    program->call(arguments, results, options);
  const cuda::Driver &d = cuda::driver();
  cuda::check(d.cuCtxSynchronize(), "running " + path);

  // Results, and f32 outputs of tile functions (in place; a select's or
  // top-k's are partly written by design: no error there).
  std::cout << path << ":";
  for (size_t r = 0; r < signature.params.size(); ++r) {
    const Parameter &p = signature.params[r];
    bool output = p.role == ParamRole::Output && p.dtype == DType::F32;
    if (p.role != ParamRole::Result && !output)
      continue;
    const Buffer &b = buffers[r];
    std::vector<float> host(b.bytes / 4);
    cuda::check(d.cuMemcpyDtoHAsync(host.data(), b.data, b.bytes, nullptr),
                "download");
    cuda::check(d.cuCtxSynchronize(), "download");
    double sum = 0;
    size_t nan = 0;
    for (float v : host) {
      if (std::isnan(v))
        ++nan;
      else
        sum += v;
    }
    std::cout << " " << p.name << " sum=" << sum << " unwritten=" << nan;
    if (nan && !output)
      std::cout << " (ERROR)";
  }
  std::cout << "\n";
  for (const Buffer &b : buffers)
    d.cuMemFree(b.data);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::map<std::string, int64_t> sizes;
  std::vector<std::string> bundles;
  bool checked = false;
  int repeat = 1;
  unsigned seed = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--size" && i + 1 < argc) {
      std::string item = argv[++i];
      size_t eq = item.find('=');
      if (eq == std::string::npos) {
        std::cerr << "kge-bundle-run: expected SYMBOL=VALUE, got " << item
                  << "\n";
        return 2;
      }
      sizes[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } else if (arg == "--checked") {
      checked = true;
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::stoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = static_cast<unsigned>(std::stoul(argv[++i]));
    } else {
      bundles.push_back(arg);
    }
  }
  if (bundles.empty()) {
    std::cerr << "usage: kge-bundle-run BUNDLE... [--size SYMBOL=VALUE]... "
                 "[--checked] [--repeat N] [--seed S]\n";
    return 2;
  }
  int status = 0;
  for (const std::string &bundle : bundles) {
    try {
      runBundle(bundle, sizes, checked, repeat, seed);
    } catch (const Error &e) {
      std::cerr << "kge-bundle-run: " << bundle << ": " << e.what() << "\n";
      status = 1;
    }
  }
  return status;
}
