//===- Npy.cpp - NumPy .npy files -----------------------------------------===//

#include "Npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

namespace npy {

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static const char kMagic[] = "\x93NUMPY";

static bool dtypeFromDescr(const std::string &descr, DType &dtype) {
  static const std::pair<const char *, DType> table[] = {
      {"<f2", DType::F16}, {"<f4", DType::F32}, {"<f8", DType::F64},
      {"<i4", DType::I32}, {"<i8", DType::I64}};
  for (auto &[name, type] : table)
    if (descr == name) {
      dtype = type;
      return true;
    }
  return false;
}

static const char *descrFromDtype(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "<f2";
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::BF16:
    break;
  }
  return nullptr;
}

bool readNpy(const std::string &path, NpyArray &array, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::vector<char> data((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  auto fail = [&](const std::string &why) {
    error = "'" + path + "' is not a supported .npy file: " + why;
    return false;
  };
  if (data.size() < 10 || std::memcmp(data.data(), kMagic, 6) != 0)
    return fail("missing the \\x93NUMPY magic");
  unsigned major = static_cast<unsigned char>(data[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(data[8]) |
                   (static_cast<unsigned char>(data[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail("truncated header");
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength = (headerLength << 8) | static_cast<unsigned char>(data[8 + i]);
    headerStart = 12;
  } else {
    return fail("unknown format version " + std::to_string(major));
  }
  if (headerStart + headerLength > data.size())
    return fail("truncated header");
  std::string header(data.data() + headerStart, headerLength);

  std::smatch match;
  static const std::regex descrRe("'descr'\\s*:\\s*'([^']*)'");
  static const std::regex orderRe("'fortran_order'\\s*:\\s*(True|False)");
  static const std::regex shapeRe("'shape'\\s*:\\s*\\(([^)]*)\\)");
  if (!std::regex_search(header, match, descrRe))
    return fail("no 'descr' in the header");
  if (!dtypeFromDescr(match[1].str(), array.dtype))
    return fail("unsupported dtype '" + match[1].str() +
                "' (expected <f2, <f4, <f8, <i4 or <i8)");
  if (!std::regex_search(header, match, orderRe))
    return fail("no 'fortran_order' in the header");
  if (match[1].str() == "True")
    return fail("Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, match, shapeRe))
    return fail("no 'shape' in the header");
  array.shape.clear();
  std::stringstream dims(match[1].str());
  std::string item;
  while (std::getline(dims, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty())
      continue;
    if (item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 15)
      return fail("bad dimension '" + item + "'");
    array.shape.push_back(std::stoll(item));
  }
  size_t payload = headerStart + headerLength;
  int64_t elements = 1;
  for (int64_t d : array.shape)
    if (__builtin_mul_overflow(elements, d, &elements))
      return fail("the shape has too many elements");
  size_t expected;
  if (__builtin_mul_overflow(static_cast<size_t>(elements),
                             static_cast<size_t>(dtypeSize(array.dtype)),
                             &expected))
    return fail("the shape has too many elements");
  if (data.size() - payload != expected)
    return fail("expected " + std::to_string(expected) + " bytes of data, got " +
                std::to_string(data.size() - payload));
  array.bytes.assign(data.begin() + payload, data.end());
  return true;
}

bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error) {
  const char *descr = descrFromDtype(array.dtype);
  if (!descr) {
    error = std::string("cannot write dtype ") + dtypeName(array.dtype) +
            " to .npy";
    return false;
  }
  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (int64_t d : array.shape)
    dict << d << ", ";
  dict << "), }";
  std::string header = dict.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = "cannot write '" + path + "'";
    return false;
  }
  out.write(kMagic, 6);
  out.put(1);
  out.put(0);
  uint16_t length = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(length & 0xff));
  out.put(static_cast<char>(length >> 8));
  out.write(header.data(), header.size());
  out.write(array.bytes.data(), array.bytes.size());
  if (!out) {
    error = "failed writing '" + path + "'";
    return false;
  }
  return true;
}

} // namespace npy
