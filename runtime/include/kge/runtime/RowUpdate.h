//===- RowUpdate.h - row-sparse optimizer updates on the GPU ----*- C++ -*-===//
//
// The updates of a row-sparse optimizer (kge.training.RowSparseOptimizer)
// as the device library's kernels: the gathered rows' gradients summed into
// a buffer, then Adagrad or lazy Adam applied to the rows they reached, in
// one kernel per table instead of a dozen elementwise passes. Each call
// checks its arrays (float32 tables and gradients, int64 indices, int32
// flags; C-contiguous, on one device; matching shapes) and launches on
// `stream` without synchronizing, so a CUDA graph may capture it.
//
// A table is [rows, ...]: its row is everything after the first dimension
// (a vector, or a matrix of TransR's). Two ways to name the rows updated:
// - dense: no index; the gradient is a buffer shaped like the table, whose
//   rows the step did not reach are zero (Adagrad skips zero elements, Adam
//   the rows whose `touched` flag is 0). The kernel clears the buffer and
//   the flags after use, so they are ready for the next step.
// - indexed: gradient row u belongs to table row index[u] (unique indices,
//   as torch.unique gives them); the buffer is left as it is.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_ROWUPDATE_H
#define KGE_RUNTIME_ROWUPDATE_H

#include "kge/runtime/Runtime.h"

namespace kge_runtime {
namespace rows {

/// grad[index[k]] += values[k] for every k, atomically (duplicates sum);
/// touched[index[k]] = 1 where `touched` is given. An index outside the
/// buffer's rows is skipped and the smallest such position k is written to
/// `firstBad` (one int64, which the caller fills with a value >= the
/// index count and reads when it chooses: nothing here waits for the GPU).
void add(const DeviceArray &index, const DeviceArray &values,
         const DeviceArray &grad, const DeviceArray *touched,
         const DeviceArray &firstBad, uint64_t stream = 0);

/// Adagrad: sum += g * g; param += -lr * (g / (sqrt(sum) + eps)). With an
/// index, `firstBad` is required: an index beyond the table is skipped and
/// its smallest position written there, as add does.
void adagrad(const DeviceArray &param, const DeviceArray &sumSquares,
             const DeviceArray &grad, const DeviceArray *index,
             const DeviceArray *firstBad, float lr, float eps,
             uint64_t stream = 0);

/// Lazy Adam (torch.optim.SparseAdam's update) with the bias-corrected
/// step lr * sqrt(1 - beta2^t) / (1 - beta1^t) read from `stepSize` (one
/// float32 on the device, so that a captured step takes each replay's).
/// `touched` only without an index; `firstBad` as for adagrad.
void adam(const DeviceArray &param, const DeviceArray &m, const DeviceArray &v,
          const DeviceArray &grad, const DeviceArray *index,
          const DeviceArray *touched, const DeviceArray *firstBad,
          const DeviceArray &stepSize, double beta1, double beta2, float eps,
          uint64_t stream = 0);

} // namespace rows
} // namespace kge_runtime

#endif // KGE_RUNTIME_ROWUPDATE_H
