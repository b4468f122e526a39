//===- InitAll.cpp - register everything KGE uses -------------------------===//

#include "InitAll.h"

#include "Conversion/Passes.h"
#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "Dialect/BatchedVector/Transforms/Passes.h"
#include "Dialect/Graph/IR/GraphDialect.h"
#include "Dialect/Kron/IR/KronDialect.h"
#include "Dialect/Kron/Transforms/Passes.h"
#include "Dialect/TileIterator/IR/TileIteratorDialect.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Dialect/TileIterator/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "Transforms/Passes.h"
#include "Transforms/Pipelines.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include <mutex>

using namespace mlir;

void kge::registerAllDialects(DialectRegistry &registry) {
  registry.insert<bvec::BatchedVectorDialect, tile::TileIteratorDialect,
                  graph::GraphDialect, kron::KronDialect>();
  // tensor: graph functions take and return tensors.
  registry.insert<tensor::TensorDialect>();
  // linalg: raised to tile by tile-raise-linalg.
  registry.insert<linalg::LinalgDialect>();
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect,
                  func::FuncDialect, gpu::GPUDialect, index::IndexDialect,
                  LLVM::LLVMDialect, math::MathDialect, memref::MemRefDialect,
                  NVVM::NVVMDialect, scf::SCFDialect, ub::UBDialect,
                  vector::VectorDialect>();

  // ConvertToLLVM interfaces: without them convert-gpu-to-nvvm silently
  // leaves arith/memref/... operations unconverted.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);

  // Serialization of gpu.modules to PTX and of host code to LLVM IR.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

void kge::registerKGEPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerKGEConversionPasses();
    bvec::registerBatchedVectorPasses();
    graph::registerGraphPasses();
    kron::registerKronPasses();
    tile::registerTileIteratorPasses();
    registerKGETransformsPasses();
    registerPipelines();
  });
}

void kge::registerAllPasses() {
  registerKGEPasses();
  static std::once_flag once;
  std::call_once(once, [] {
    // Upstream passes used by KGE's pipelines and useful beside them.
    registerTransformsPasses();
    registerConversionPasses();
    registerGPUPasses();
    gpu::registerGPUToNVVMPipeline();
    math::registerMathPasses();
    memref::registerMemRefPasses();
  });
}
