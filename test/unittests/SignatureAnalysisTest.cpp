//===- SignatureAnalysisTest.cpp - signatures of bvec functions -----------===//

#include "Dialect/BatchedVector/Analysis/SignatureAnalysis.h"
#include "InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class SignatureAnalysisTest : public ::testing::Test {
protected:
  SignatureAnalysisTest() {
    DialectRegistry registry;
    kge::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  kge_runtime::Signature signatureOf(StringRef source) {
    module = parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module);
    auto func = *module->getOps<bvec::FuncOp>().begin();
    FailureOr<kge_runtime::Signature> signature = bvec::computeSignature(func);
    EXPECT_TRUE(succeeded(signature));
    return *signature;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

std::vector<std::string> symbols(const kge_runtime::Parameter &param) {
  std::vector<std::string> result;
  for (const kge_runtime::Dim &dim : param.shape)
    result.push_back(dim.str());
  return result;
}

TEST_F(SignatureAnalysisTest, UnifiesLengthsThroughOperations) {
  kge_runtime::Signature s = signatureOf(R"mlir(
    bvec.func @f(%A: !bvec.table<?x?xf32>, %B: !bvec.table<5x?xf32>,
                 %P: !bvec.table<?x?x?xf32>, %i: !bvec.indices<?xi32>)
        -> (out: !bvec.vec<?x?xf32>, m: !bvec.mat<?x?x?xf32>) {
      %a = bvec.gather_vec %A[%i] : !bvec.table<?x?xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x?xf32>
      %b = bvec.gather_vec %B[%i] : !bvec.table<5x?xf32>, !bvec.indices<?xi32> -> !bvec.vec<?x?xf32>
      %p = bvec.gather_mat %P[%i] : !bvec.table<?x?x?xf32>, !bvec.indices<?xi32> -> !bvec.mat<?x?x?xf32>
      %s = bvec.add %a, %b : !bvec.vec<?x?xf32>
      %o = bvec.vec_mul_mat %s, %p : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32> -> !bvec.vec<?x?xf32>
      %x = bvec.vec_outer_vec %a, %o : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.mat<?x?x?xf32>
      bvec.return %o, %x : !bvec.vec<?x?xf32>, !bvec.mat<?x?x?xf32>
    })mlir");
  ASSERT_EQ(s.params.size(), 6u);
  EXPECT_EQ(s.numArguments(), 4u);
  EXPECT_EQ(symbols(s.params[0]), (std::vector<std::string>{"N_A", "D_A"}));
  EXPECT_EQ(symbols(s.params[1]), (std::vector<std::string>{"5", "D_A"}));
  EXPECT_EQ(symbols(s.params[2]),
            (std::vector<std::string>{"N_P", "D_A", "D2_P"}));
  EXPECT_EQ(symbols(s.params[3]), (std::vector<std::string>{"B"}));
  EXPECT_EQ(s.params[3].indexedTables, (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(s.params[3].dtype, kge_runtime::DType::I32);
  EXPECT_EQ(symbols(s.params[4]), (std::vector<std::string>{"B", "D2_P"}));
  EXPECT_EQ(symbols(s.params[5]),
            (std::vector<std::string>{"B", "D_A", "D2_P"}));
  EXPECT_EQ(s.params[5].role, kge_runtime::ParamRole::Result);
}

TEST_F(SignatureAnalysisTest, StaticBatch) {
  kge_runtime::Signature s = signatureOf(R"mlir(
    bvec.func @g(%E: !bvec.table<10x4xf64>, %h: !bvec.indices<3xi64>)
        -> (s: !bvec.scalar<3xf64>) {
      %v = bvec.gather_vec %E[%h] : !bvec.table<10x4xf64>, !bvec.indices<3xi64> -> !bvec.vec<3x4xf64>
      %n = bvec.norm %v, p = 1 : !bvec.vec<3x4xf64> -> !bvec.scalar<3xf64>
      bvec.return %n : !bvec.scalar<3xf64>
    })mlir");
  EXPECT_EQ(symbols(s.params[0]), (std::vector<std::string>{"10", "4"}));
  EXPECT_EQ(symbols(s.params[2]), (std::vector<std::string>{"3"}));
  EXPECT_EQ(s.params[2].dtype, kge_runtime::DType::F64);
}

} // namespace
