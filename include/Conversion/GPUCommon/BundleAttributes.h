//===- BundleAttributes.h - a lowered module's bundle description -*- C++ -*-===//
//
// What every dialect's GPU lowering attaches to the `gpu.module` it makes,
// for kge-translate --kge-to-bundle to write into the manifest: the
// signature, the mode, scratch buffers, the launch plan and the index
// checks (docs/BundleFormat.md). The builders here write those
// dictionaries; sizes are expressions over the signature's symbols.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_CONVERSION_GPUCOMMON_BUNDLEATTRIBUTES_H
#define KGE_CONVERSION_GPUCOMMON_BUNDLEATTRIBUTES_H

#include "kge/runtime/Signature.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace mlir {
namespace kge {

/// Names of the attributes a lowered `gpu.module` carries for the bundle
/// manifest.
inline constexpr llvm::StringLiteral kSignatureAttrName = "kge.signature";
/// On a kernel: how many of its last arguments are 128-byte grid constants
/// (TMA tensor maps, pointers), marked byval + nvvm.grid_constant once the
/// kernel is an llvm.func (kge-grid-constant-arguments).
inline constexpr llvm::StringLiteral kGridConstantsAttrName =
    "kge.grid_constants";
/// On a kernel that the launch plan runs beside the next one (a fork): it
/// lets the next kernel start once each of its blocks passed its wait for
/// the grids before it (kge-translate emits griddepcontrol.launch_dependents
/// after that wait on sm_90).
inline constexpr llvm::StringLiteral kLaunchDependentsAttrName =
    "kge.launch_dependents";
/// On the kernel that joins it: it waits for the grids before it when it
/// returns, not at its entry, so that it completes after the kernel it ran
/// beside.
inline constexpr llvm::StringLiteral kWaitAtExitAttrName = "kge.wait_at_exit";
inline constexpr llvm::StringLiteral kLaunchPlanAttrName = "kge.launch_plan";
inline constexpr llvm::StringLiteral kScratchAttrName = "kge.scratch";
inline constexpr llvm::StringLiteral kChecksAttrName = "kge.checks";
inline constexpr llvm::StringLiteral kModeAttrName = "kge.mode";
/// Optional: the parameters the caller derives from others (graph data,
/// layouts, schedules), by name: their `kge.derived` dictionaries, written
/// to the manifest's `derived` object so that a caller without the
/// compiler can compute them.
inline constexpr llvm::StringLiteral kDerivedAttrName = "kge.derived";

/// Builds the dictionaries of the bundle description.
class BundleBuilder {
public:
  explicit BundleBuilder(Builder &b) : b(b) {}

  Attribute str(StringRef s) { return b.getStringAttr(s); }
  Attribute num(int64_t v) { return b.getI64IntegerAttr(v); }
  Attribute dict(ArrayRef<std::pair<StringRef, Attribute>> entries);
  Attribute arr(ArrayRef<Attribute> values) { return b.getArrayAttr(values); }
  Attribute dims(ArrayRef<std::string> shape);

  /// The signature as the manifest's `function` object.
  Attribute signature(const kge_runtime::Signature &signature);
  /// A kernel argument: a pointer to `buffer` ("param:<name>" or
  /// "scratch:<name>").
  Attribute pointer(StringRef buffer);
  /// A kernel argument: a memref over `buffer` with `shape`.
  Attribute memref(StringRef buffer, ArrayRef<std::string> shape);
  /// A scalar kernel argument of `kind` ("i32", "i64") with `value`.
  Attribute scalar(StringRef kind, Attribute value);
  /// A kernel launch of the plan.
  Attribute launch(StringRef function, StringRef module,
                   ArrayRef<std::string> grid, int64_t block,
                   StringRef sharedBytes, ArrayRef<Attribute> args);

  /// Appends the device library's counting sort of `count` items by their
  /// `keyBits`-bit keys in `keyBuffer` (values in [0, `keys`)) to a launch
  /// plan: the scratch `counts` (one i32 per key, cleared), the histogram,
  /// the one-block scan and the scatter of the item numbers into
  /// `permBuffer` (allocated by the caller), each key's items consecutive
  /// (runs of rare keys first: not in key order). After the scatter,
  /// counts[g] is the end of key g's run. With `runLengths`, a scratch of
  /// that name receives every key's number of items, written by `scans`,
  /// the steps that replace the scan (kge_key_scan_tiles, which also cuts
  /// the runs into tiles; given together with `runLengths`). Up to
  /// 8,192 keys the histograms and the scatter count in shared memory per
  /// chunk of 2,048 items (the library's KGE_SORT_PRIVATE_KEYS and
  /// KGE_SORT_CHUNK), with global atomics above. `wrap` sees each step
  /// (e.g. to add a `when`).
  void appendCountingSort(SmallVectorImpl<Attribute> &scratch,
                          SmallVectorImpl<Attribute> &steps,
                          StringRef keyBuffer, unsigned keyBits,
                          StringRef count, StringRef keys,
                          StringRef permBuffer,
                          llvm::function_ref<Attribute(Attribute)> wrap,
                          StringRef runLengths = "",
                          ArrayRef<Attribute> scans = {});

private:
  Builder &b;
};

/// `min(N_A, N_B, ...)`: the sizes of the dimensions an index array
/// selects in the arrays it indexes (its range in checked mode).
std::string indexRange(const kge_runtime::Signature &signature,
                       const kge_runtime::Parameter &param);

/// The row length (last dimension) of the widest table the index array
/// `param` reads, as a launch-plan expression.
std::string rowLength(const kge_runtime::Signature &signature,
                      const kge_runtime::Parameter &param);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_GPUCOMMON_BUNDLEATTRIBUTES_H
