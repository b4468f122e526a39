//===- ElementaryFunctionsTest.cpp - accuracy of the f32 expansions -------===//
//
// Runs the code that emitSinCos() emits, JIT-compiled for the CPU through
// MLIR's ExecutionEngine (the same arith operations the GPU lowering emits),
// on a sample of every float and on the hard cases of argument reduction,
// and compares it with the double-precision sine and cosine.
//
//===----------------------------------------------------------------------===//

#include "Conversion/GPUCommon/ElementaryFunctions.h"
#include "InitAll.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace mlir;

namespace {

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint32_t toBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// Error of `got` against the exact `want`, in units in the last place of
/// the float nearest `want`.
double ulpError(float got, double want) {
  float nearest = static_cast<float>(want);
  double ulp = std::nextafter(std::fabs(nearest),
                              std::numeric_limits<float>::infinity()) -
               std::fabs(nearest);
  if (std::fabs(nearest) < std::numeric_limits<float>::min())
    ulp = std::numeric_limits<float>::denorm_min();
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

/// sin and cos of every element of an array, computed by the expansion in
/// vectors of `width` elements (1: scalars).
class SinCosKernel {
public:
  explicit SinCosKernel(int64_t width) : width(width) {
    static bool initialized = [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
      return true;
    }();
    (void)initialized;
    DialectRegistry registry;
    kge::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = buildModule();
    PassManager pm(&context);
    pm.addPass(createSCFToControlFlowPass());
    pm.addPass(createConvertVectorToLLVMPass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createFinalizeMemRefToLLVMConversionPass());
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createArithToLLVMConversionPass());
    pm.addPass(createConvertFuncToLLVMPass());
    pm.addPass(createConvertControlFlowToLLVMPass());
    pm.addPass(createReconcileUnrealizedCastsPass());
    if (failed(pm.run(*module)))
      return;
    ExecutionEngineOptions options;
    std::function<llvm::Error(llvm::Module *)> optimizer =
        makeOptimizingTransformer(2, 0, nullptr);
    options.transformer = optimizer;
    auto created = ExecutionEngine::create(*module, options);
    if (!created) {
      llvm::consumeError(created.takeError());
      return;
    }
    engine = std::move(*created);
  }

  bool ok() const { return engine != nullptr; }

  /// Fills `sines` and `cosines` (resized) with the expansion's results.
  void run(std::vector<float> &inputs, std::vector<float> &sines,
           std::vector<float> &cosines) {
    inputs.resize(llvm::alignTo(inputs.size(), width), 0.0f);
    sines.assign(inputs.size(), 0.0f);
    cosines.assign(inputs.size(), 0.0f);
    auto descriptor = [](std::vector<float> &v) {
      return StridedMemRefType<float, 1>{v.data(), v.data(), 0,
                                         {static_cast<int64_t>(v.size())},
                                         {1}};
    };
    auto in = descriptor(inputs), s = descriptor(sines), c = descriptor(cosines);
    auto *inPtr = &in, *sPtr = &s, *cPtr = &c;
    llvm::Error error = engine->invoke("sincos", inPtr, sPtr, cPtr);
    ASSERT_FALSE(error) << llvm::toString(std::move(error));
  }

private:
  OwningOpRef<ModuleOp> buildModule() {
    OpBuilder b(&context);
    Location loc = b.getUnknownLoc();
    OwningOpRef<ModuleOp> built = ModuleOp::create(loc);
    b.setInsertionPointToEnd(built->getBody());
    auto memref = MemRefType::get({ShapedType::kDynamic}, b.getF32Type());
    auto function = func::FuncOp::create(
        b, loc, "sincos", b.getFunctionType({memref, memref, memref}, {}));
    function->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    Block *entry = function.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value in = entry->getArgument(0);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value size = memref::DimOp::create(b, loc, in, zero);
    Value step = arith::ConstantIndexOp::create(b, loc, width);
    auto loop = scf::ForOp::create(b, loc, zero, size, step);
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    Value x;
    if (width == 1) {
      x = memref::LoadOp::create(b, loc, in, ValueRange{i});
    } else {
      x = vector::LoadOp::create(
          b, loc, VectorType::get({width}, b.getF32Type()), in, ValueRange{i});
    }
    kge::SinCos result = kge::emitSinCos(b, loc, x);
    for (auto [value, out] : {std::pair(result.sin, entry->getArgument(1)),
                              std::pair(result.cos, entry->getArgument(2))}) {
      if (width == 1)
        memref::StoreOp::create(b, loc, value, out, ValueRange{i});
      else
        vector::StoreOp::create(b, loc, value, out, ValueRange{i});
    }
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    return built;
  }

  int64_t width;
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;
};

/// Largest error over `inputs` of the expansion in vectors of `width`.
struct Worst {
  double sinUlp = 0, cosUlp = 0;
  float sinAt = 0, cosAt = 0;
};

Worst measure(SinCosKernel &kernel, std::vector<float> inputs) {
  std::vector<float> sines, cosines;
  kernel.run(inputs, sines, cosines);
  Worst worst;
  for (size_t i = 0; i < inputs.size(); ++i) {
    double x = inputs[i];
    double s = ulpError(sines[i], std::sin(x));
    double c = ulpError(cosines[i], std::cos(x));
    if (!(s <= worst.sinUlp)) {
      worst.sinUlp = s;
      worst.sinAt = inputs[i];
    }
    if (!(c <= worst.cosUlp)) {
      worst.cosUlp = c;
      worst.cosAt = inputs[i];
    }
  }
  return worst;
}

/// Every 61st float (both signs), from the smallest subnormal to the
/// largest finite float: about 70 million arguments in all.
std::vector<float> everyFloatSample() {
  std::vector<float> inputs;
  for (uint64_t bits = 1; bits < 0x7f800000u; bits += 61) {
    inputs.push_back(fromBits(static_cast<uint32_t>(bits)));
    inputs.push_back(-fromBits(static_cast<uint32_t>(bits)));
  }
  return inputs;
}

/// The floats nearest to multiples of pi/2 (where the reduced argument is
/// smallest and cancellation largest), around the fast path's limit, and
/// random magnitudes of every exponent.
std::vector<float> hardCases() {
  std::vector<float> inputs;
  const double halfPi = 1.5707963267948966;
  for (int64_t k = 1; k < (int64_t(1) << 20); k = k * 3 / 2 + 1) {
    float x = static_cast<float>(k * halfPi);
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e38f)})
      inputs.insert(inputs.end(), {y, -y});
  }
  for (float limit = 105600.0f; limit < 105640.0f;
       limit = std::nextafter(limit, 1e38f))
    inputs.insert(inputs.end(), {limit, -limit});
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i)
    inputs.push_back(fromBits((rng() & 0xff7fffffu) | ((rng() & 1u) << 31)));
  return inputs;
}

class SinCosTest : public ::testing::TestWithParam<int64_t> {
protected:
  /// The expansion in vectors of the test's width is within 1.6 ulp of
  /// the double-precision sine and cosine on every one of `inputs`.
  void expectWithinBound(std::vector<float> inputs) {
    SinCosKernel kernel(GetParam());
    ASSERT_TRUE(kernel.ok());
    Worst worst = measure(kernel, std::move(inputs));
    EXPECT_LE(worst.sinUlp, 1.6) << "sin at " << worst.sinAt;
    EXPECT_LE(worst.cosUlp, 1.6) << "cos at " << worst.cosAt;
  }
};

TEST_P(SinCosTest, WithinOnePointSixUlpOfEveryFloatSample) {
  expectWithinBound(everyFloatSample());
}

TEST_P(SinCosTest, WithinOnePointSixUlpOfHardCases) {
  expectWithinBound(hardCases());
}

TEST_P(SinCosTest, SpecialValues) {
  SinCosKernel kernel(GetParam());
  ASSERT_TRUE(kernel.ok());
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> inputs{0.0f, -0.0f, inf, -inf,
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min()};
  std::vector<float> sines, cosines;
  kernel.run(inputs, sines, cosines);
  EXPECT_EQ(toBits(sines[0]), toBits(0.0f));
  EXPECT_EQ(toBits(sines[1]), toBits(-0.0f));
  EXPECT_EQ(cosines[0], 1.0f);
  EXPECT_EQ(cosines[1], 1.0f);
  for (int i : {2, 3, 4}) {
    EXPECT_TRUE(std::isnan(sines[i])) << inputs[i];
    EXPECT_TRUE(std::isnan(cosines[i])) << inputs[i];
  }
  EXPECT_LE(ulpError(sines[5], std::sin(double(inputs[5]))), 1.6);
  EXPECT_LE(ulpError(cosines[5], std::cos(double(inputs[5]))), 1.6);
  EXPECT_EQ(sines[6], inputs[6]);
  EXPECT_EQ(cosines[6], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Widths, SinCosTest, ::testing::Values(1, 4),
                         [](const auto &info) {
                           return info.param == 1 ? std::string("Scalar")
                                                  : std::string("Vector4");
                         });

} // namespace
