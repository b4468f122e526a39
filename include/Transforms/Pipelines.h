//===- Pipelines.h - KGE's named pass pipelines -----------------*- C++ -*-===//
//
// The named pipelines of KGE, registered with kge-opt and used by the
// runners and the Python module:
//
//   kge-lower-to-cpu   bvec and tile -> loops -> LLVM dialect, ready for
//                      MLIR's ExecutionEngine (the CPU execution path).
//   kge-lower-to-gpu   bvec -> one fused kernel per function, tile
//                      functions -> tiled kernels (gpu dialect) ->
//                      NVVM/LLVM dialects, ready for kge-translate
//                      --kge-to-bundle.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_TRANSFORMS_PIPELINES_H
#define KGE_TRANSFORMS_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace kge {

/// bvec -> scf/memref/arith/math -> LLVM dialect.
void buildLowerToCPUPipeline(OpPassManager &pm);

/// Options of kge-lower-to-gpu: bvec-fuse's layout choices and the
/// negative-sampling mode of convert-bvec-to-gpu.
struct LowerToGPUOptions : public PassPipelineOptions<LowerToGPUOptions> {
  Option<std::string> negative{
      *this, "negative",
      llvm::cl::desc("index array corrupted in negative-sampling mode")};
  Option<std::string> sharedNegatives{
      *this, "shared-negatives",
      llvm::cl::desc("index array of negatives shared by every edge: bvec "
                     "functions score [B, N] through tile tasks "
                     "(convert-bvec-to-tile)")};
  Option<bool> fuseMatrixProducts{
      *this, "fuse-matrix-products",
      llvm::cl::desc("keep bvec's matrix products per edge (TransR, RESCAL) "
                     "in its fused kernel; false: lower them through tile's "
                     "segment iterators (convert-bvec-to-tile{matrices})"),
      llvm::cl::init(false)};
  Option<int64_t> tile{*this, "tile",
                       llvm::cl::desc("edges per thread block (0: choose)"),
                       llvm::cl::init(0)};
  Option<int64_t> warps{*this, "warps",
                        llvm::cl::desc("warps per thread block (0: choose)"),
                        llvm::cl::init(0)};
  Option<int64_t> vectorWidth{
      *this, "vector-width",
      llvm::cl::desc("elements per lane per load, 1 or 4 (0: choose)"),
      llvm::cl::init(0)};
  Option<std::string> reorderKey{
      *this, "reorder-key",
      llvm::cl::desc("index array to sort edges by (empty: choose)")};
  Option<int64_t> reorderGroup{
      *this, "reorder-group",
      llvm::cl::desc("sort within groups of this many tiles; 0: the whole "
                     "batch, 1: none (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> stageRepeats{
      *this, "stage-repeats",
      llvm::cl::desc("stage a gather's rows in shared memory in tiles where "
                     "at least this percentage of the edges repeat a row; "
                     "0: always, 101: never (-1: choose)"),
      llvm::cl::init(-1)};
  Option<std::string> matrixMath{
      *this, "matrix-math",
      llvm::cl::desc("bvec: matrix products over shared matrices, tf32x3 "
                     "(tensor cores, FP32 accuracy) or fma; tile tasks: "
                     "products of f32 operands, fma, tf32 or tf32x3 (empty: "
                     "choose)")};
  Option<int64_t> carryFloats{
      *this, "carry-floats",
      llvm::cl::desc("keep vectors that later stages read again in "
                     "registers when they need at most this many floats per "
                     "lane; 0: never (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> blocksPerSM{
      *this, "blocks-per-sm",
      llvm::cl::desc("thread blocks per multiprocessor to compile for "
                     "(registers per thread: 64K / (blocks x threads), at "
                     "least 64); 0: no request (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> reorderMinBatch{
      *this, "reorder-min-batch",
      llvm::cl::desc("with a whole-batch sort, sort only batches of at least "
                     "this many edges; 0: always (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> reorderMinReuse{
      *this, "reorder-min-reuse",
      llvm::cl::desc("with a whole-batch sort, sort only batches with at "
                     "least this many edges per row of the key's table; 0: "
                     "no such condition (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> reorderMinRow{
      *this, "reorder-min-row",
      llvm::cl::desc("with a whole-batch sort, sort only when the rows of "
                     "the key's table have at least this many elements; 0: "
                     "no such condition (-1: choose)"),
      llvm::cl::init(-1)};
  Option<int64_t> deterministic{
      *this, "deterministic",
      llvm::cl::desc("1: bitwise-identical results for identical inputs; 0: "
                     "not guaranteed (-1: choose, 1)"),
      llvm::cl::init(-1)};
  // convert-tile-to-gpu's options (matrix-math above applies to both).
  Option<int64_t> blockM{*this, "block-m",
                         llvm::cl::desc("tile tasks: rows of pairs per thread "
                                        "block (all five 0: choose)"),
                         llvm::cl::init(0)};
  Option<int64_t> blockN{
      *this, "block-n",
      llvm::cl::desc("tile tasks: columns of pairs per thread block"),
      llvm::cl::init(0)};
  Option<int64_t> blockK{
      *this, "block-k",
      llvm::cl::desc("tile tasks: reduction steps staged at a time"),
      llvm::cl::init(0)};
  Option<int64_t> threadM{
      *this, "thread-m",
      llvm::cl::desc("tile tasks: rows of pairs per thread"),
      llvm::cl::init(0)};
  Option<int64_t> threadN{
      *this, "thread-n",
      llvm::cl::desc("tile tasks: columns of pairs per thread"),
      llvm::cl::init(0)};
  Option<bool> warpgroup{
      *this, "warpgroup",
      llvm::cl::desc("tile tasks: 16-bit (and k-major tf32) operands on "
                     "warpgroup MMA (sm_90a); false: mma.sync"),
      llvm::cl::init(true)};
  Option<int64_t> clusterM{
      *this, "cluster-m",
      llvm::cl::desc("tile tasks, warpgroup MMA: blocks per cluster along M "
                     "sharing B's tiles (1, 2 or 4)"),
      llvm::cl::init(2)};
};

/// bvec -> fused gpu kernels -> NVVM/LLVM dialects.
void buildLowerToGPUPipeline(OpPassManager &pm,
                             const LowerToGPUOptions &options);

/// Registers every named pipeline with the global pass registry.
void registerPipelines();

} // namespace kge
} // namespace mlir

#endif // KGE_TRANSFORMS_PIPELINES_H
