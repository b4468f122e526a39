//===- Pipelines.cpp - KGE's named pass pipelines -------------------------===//

#include "Transforms/Pipelines.h"

#include "Conversion/Passes.h"
#include "Dialect/BatchedVector/Transforms/Passes.h"
#include "Dialect/Kron/Transforms/Passes.h"
#include "Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void kge::buildLowerToCPUPipeline(OpPassManager &pm) {
  pm.addPass(createConvertBatchedVectorToSCF());
  pm.addPass(createConvertTileIteratorToSCF());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // f16/bf16 math is computed in f32.
  pm.addNestedPass<func::FuncOp>(math::createMathExtendToSupportedTypes());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void kge::buildLowerToGPUPipeline(OpPassManager &pm,
                                  const LowerToGPUOptions &options) {
  // Scoring against shared negatives: every bvec function becomes a tile
  // task, lowered below with the tile options.
  if (!options.sharedNegatives.empty()) {
    ConvertBatchedVectorToTileOptions shared;
    shared.sharedNegatives = options.sharedNegatives;
    pm.addPass(createConvertBatchedVectorToTile(shared));
  } else if (options.negative.empty() && !options.fuseMatrixProducts) {
    // A matrix product per edge followed by a reduction (TransR, RESCAL)
    // is a tile task with a matrix per row's key: the segment iterators
    // and the tensor cores. Negative sampling keeps the fused kernel.
    ConvertBatchedVectorToTileOptions matrices;
    matrices.matrices = true;
    pm.addPass(createConvertBatchedVectorToTile(matrices));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  bvec::BatchedVectorFuseOptions fuse;
  fuse.tile = options.tile;
  fuse.warps = options.warps;
  fuse.vectorWidth = options.vectorWidth;
  fuse.reorderKey = options.reorderKey;
  fuse.reorderGroup = options.reorderGroup;
  fuse.stageRepeats = options.stageRepeats;
  fuse.matrixMath = options.matrixMath;
  fuse.carryFloats = options.carryFloats;
  fuse.blocksPerSM = options.blocksPerSM;
  fuse.deterministic = options.deterministic;
  fuse.reorderMinBatch = options.reorderMinBatch;
  fuse.reorderMinReuse = options.reorderMinReuse;
  fuse.reorderMinRow = options.reorderMinRow;
  pm.addPass(bvec::createBatchedVectorFuse(fuse));
  ConvertBatchedVectorToGPUOptions convert;
  convert.negative = options.negative;
  pm.addPass(createConvertBatchedVectorToGPU(convert));
  ConvertTileIteratorToGPUOptions tile;
  tile.blockM = options.blockM;
  tile.blockN = options.blockN;
  tile.blockK = options.blockK;
  tile.threadM = options.threadM;
  tile.threadN = options.threadN;
  tile.matrixMath = options.matrixMath;
  tile.warpgroup = options.warpgroup;
  tile.clusterM = options.clusterM;
  pm.addPass(createConvertTileIteratorToGPU(tile));
  // kron functions: their datasets as octiles (where no layout was chosen
  // before: the per-graph `auto` order), then the solver.
  pm.addPass(kron::createKronOctileTiling());
  pm.addPass(createConvertKronToGPU());
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createConvertNVGPUToNVVMPass());
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  // NVVM ops that are PTX templates (wgmma) become inline assembly.
  device.addPass(createConvertNVVMToLLVMPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  device.addPass(createExternDynamicSharedMemory());
  device.addPass(createGridConstantArguments());
}

void kge::registerPipelines() {
  PassPipelineRegistration<LowerToGPUOptions>(
      "kge-lower-to-gpu",
      "Lower bvec functions to fused GPU kernels, tile functions to tiled "
      "kernels and kron functions to the Gram-matrix solver, in the NVVM "
      "dialect",
      buildLowerToGPUPipeline);
  PassPipelineRegistration<>(
      "kge-lower-to-cpu",
      "Lower bvec and tile functions to the LLVM dialect for the CPU execution "
      "path",
      buildLowerToCPUPipeline);
}
