//===- RowUpdate.cpp - row-sparse optimizer updates on the GPU ------------===//

#include "kge/runtime/RowUpdate.h"

#include "Internal.h"
#include "kge/runtime/Error.h"

#include <algorithm>

namespace kge_runtime {
namespace rows {

using namespace cuda;

namespace {

/// The arrays of one call: each checked as it is added, all on one device.
class Arrays {
public:
  explicit Arrays(const char *call) : call(call) {}

  /// Checks `a` (`name` in messages): its dtype, contiguity and device.
  const DeviceArray &add(const DeviceArray &a, const char *name, DType dtype) {
    auto what = [&] { return std::string(call) + ": '" + name + "'"; };
    if (a.dtype != dtype)
      throw ArgumentError(what() + " must be " + dtypeName(dtype) + ", got " +
                          dtypeName(a.dtype));
    checkContiguous(a, what);
    int ordinal = deviceOf(a, what);
    if (ordinal == -2)
      throw ArgumentError(what() + " is in host memory");
    if (device == -1)
      device = ordinal;
    else if (ordinal != device)
      throw ArgumentError(what() + " is on CUDA device " +
                          std::to_string(ordinal) + ", the other arrays on " +
                          std::to_string(device));
    return a;
  }

  /// Throws unless `a` has `rows` rows of `rowSize` elements (its
  /// dimensions after the first), as the table `like` does.
  void rowsOf(const DeviceArray &a, const char *name, int64_t rows,
              const DeviceArray &like, const char *likeName) {
    bool fits = !a.shape.empty() && a.shape[0] == rows &&
                a.shape.size() == like.shape.size() &&
                std::equal(a.shape.begin() + 1, a.shape.end(),
                           like.shape.begin() + 1);
    if (!fits)
      throw ArgumentError(std::string(call) + ": '" + name + "' has shape " +
                          shape(a) + ", expected " + std::to_string(rows) +
                          " rows shaped like those of '" + likeName + "' " +
                          shape(like));
  }

  /// Throws unless `a` is one-dimensional of `n` elements (any n when -1).
  int64_t vector(const DeviceArray &a, const char *name, int64_t n = -1) {
    if (a.shape.size() != 1 || (n >= 0 && a.shape[0] != n))
      throw ArgumentError(std::string(call) + ": '" + name + "' has shape " +
                          shape(a) + ", expected [" +
                          (n >= 0 ? std::to_string(n) : std::string("n")) +
                          "]");
    return a.shape[0];
  }

  /// Throws unless `a` holds one element.
  void scalar(const DeviceArray &a, const char *name) {
    int64_t n = 1;
    for (int64_t d : a.shape)
      n *= d;
    if (n != 1)
      throw ArgumentError(std::string(call) + ": '" + name +
                          "' must hold one element, has shape " + shape(a));
  }

  /// The elements of a row of table `a` ([rows, ...]), below 2^31.
  int rowSize(const DeviceArray &a, const char *name) {
    if (a.shape.size() < 2)
      throw ArgumentError(std::string(call) + ": '" + name +
                          "' must be [rows, ...], has shape " + shape(a));
    int64_t n = 1;
    for (size_t i = 1; i < a.shape.size(); ++i)
      n *= a.shape[i];
    if (n <= 0 || n > INT32_MAX)
      throw ArgumentError(std::string(call) + ": the rows of '" + name +
                          "' have " + std::to_string(n) +
                          " elements (1 to 2^31 - 1 allowed)");
    return static_cast<int>(n);
  }

  static std::string shape(const DeviceArray &a) {
    std::string s = "[";
    for (size_t i = 0; i < a.shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(a.shape[i]);
    return s + "]";
  }

  const char *call;
  int device = -1;
};

/// Launches `kernel` with one warp per row of `rows` rows.
void launch(int device, const char *kernel, int64_t rows, void **params,
            uint64_t stream) {
  if (rows == 0)
    return;
  CUfunction function = libraryKernel(device, kernel);
  // Eight warps (rows) a block; the kernels stride over the rest.
  unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>((rows + 7) / 8, 1 << 20));
  check(driver().cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1, 0,
                                reinterpret_cast<CUstream>(stream), params,
                                nullptr),
        [&] { return std::string("launching ") + kernel; });
}

uint64_t dataOf(const DeviceArray *a) { return a ? a->data : 0; }

} // namespace

void add(const DeviceArray &index, const DeviceArray &values,
         const DeviceArray &grad, const DeviceArray *touched,
         const DeviceArray &firstBad, uint64_t stream) {
  Arrays arrays("rows_add");
  arrays.add(index, "index", DType::I64);
  arrays.add(values, "values", DType::F32);
  arrays.add(grad, "grad", DType::F32);
  arrays.add(firstBad, "first_bad", DType::I64);
  int64_t n = arrays.vector(index, "index");
  int dim = arrays.rowSize(grad, "grad");
  arrays.rowsOf(values, "values", n, grad, "grad");
  long long numRows = grad.shape[0];
  if (touched) {
    arrays.add(*touched, "touched", DType::I32);
    arrays.vector(*touched, "touched", numRows);
  }
  arrays.scalar(firstBad, "first_bad");
  useDevice(arrays.device);
  int vectors = dim % 4 == 0 && ((values.data | grad.data) & 15) == 0;
  uint64_t indexData = index.data, valueData = values.data,
           gradData = grad.data, touchedData = dataOf(touched),
           badData = firstBad.data;
  long long count = n;
  void *params[] = {&indexData, &count,   &valueData,   &dim,    &vectors,
                    &gradData,  &numRows, &touchedData, &badData};
  launch(arrays.device, "kge_rows_add", n, params, stream);
}

/// The rows a dense or indexed update visits; checks grad, the index and
/// the slot of an index beyond the table (required with an index).
static int64_t updatedRows(Arrays &arrays, const DeviceArray &param,
                           const DeviceArray &grad, const DeviceArray *index,
                           const DeviceArray *firstBad) {
  int64_t rows = param.shape[0];
  if (index) {
    arrays.add(*index, "index", DType::I64);
    rows = arrays.vector(*index, "index");
    if (!firstBad)
      throw ArgumentError(std::string(arrays.call) +
                          ": an index needs 'first_bad', where an index "
                          "beyond the table is reported");
  }
  if (firstBad) {
    arrays.add(*firstBad, "first_bad", DType::I64);
    arrays.scalar(*firstBad, "first_bad");
  }
  arrays.rowsOf(grad, "grad", rows, param, "param");
  return rows;
}

void adagrad(const DeviceArray &param, const DeviceArray &sumSquares,
             const DeviceArray &grad, const DeviceArray *index,
             const DeviceArray *firstBad, float lr, float eps,
             uint64_t stream) {
  Arrays arrays("adagrad_rows");
  arrays.add(param, "param", DType::F32);
  arrays.add(sumSquares, "sum_squares", DType::F32);
  arrays.add(grad, "grad", DType::F32);
  int dim = arrays.rowSize(param, "param");
  arrays.rowsOf(sumSquares, "sum_squares", param.shape[0], param, "param");
  long long rows = updatedRows(arrays, param, grad, index, firstBad);
  long long tableRows = param.shape[0];
  useDevice(arrays.device);
  uint64_t p = param.data, s = sumSquares.data, g = grad.data,
           i = dataOf(index), bad = dataOf(firstBad);
  void *params[] = {&p,         &s,   &g,   &i,  &rows,
                    &dim,       &tableRows, &bad, &lr, &eps};
  launch(arrays.device, "kge_adagrad_rows", rows, params, stream);
}

void adam(const DeviceArray &param, const DeviceArray &m, const DeviceArray &v,
          const DeviceArray &grad, const DeviceArray *index,
          const DeviceArray *touched, const DeviceArray *firstBad,
          const DeviceArray &stepSize, double beta1, double beta2, float eps,
          uint64_t stream) {
  Arrays arrays("adam_rows");
  arrays.add(param, "param", DType::F32);
  arrays.add(m, "m", DType::F32);
  arrays.add(v, "v", DType::F32);
  arrays.add(grad, "grad", DType::F32);
  arrays.add(stepSize, "step_size", DType::F32);
  int dim = arrays.rowSize(param, "param");
  arrays.rowsOf(m, "m", param.shape[0], param, "param");
  arrays.rowsOf(v, "v", param.shape[0], param, "param");
  arrays.scalar(stepSize, "step_size");
  long long rows = updatedRows(arrays, param, grad, index, firstBad);
  if (touched) {
    if (index)
      throw ArgumentError("adam_rows: 'touched' goes with the dense buffer, "
                          "not with an index");
    arrays.add(*touched, "touched", DType::I32);
    arrays.vector(*touched, "touched", param.shape[0]);
  }
  long long tableRows = param.shape[0];
  // 1 - beta in double precision, rounded once (as PyTorch's scalars are).
  float rate1 = static_cast<float>(1.0 - beta1),
        rate2 = static_cast<float>(1.0 - beta2);
  useDevice(arrays.device);
  uint64_t p = param.data, mData = m.data, vData = v.data, g = grad.data,
           i = dataOf(index), t = dataOf(touched), bad = dataOf(firstBad),
           size = stepSize.data;
  void *params[] = {&p,         &mData, &vData, &g,     &i,     &t,    &rows,
                    &dim,       &tableRows, &bad, &rate1, &rate2, &size, &eps};
  launch(arrays.device, "kge_adam_rows", rows, params, stream);
}

} // namespace rows
} // namespace kge_runtime
