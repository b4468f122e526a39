//===- SignatureTest.cpp - argument binding of the runtime ----------------===//

#include "kge/runtime/Signature.h"

#include <gtest/gtest.h>

using namespace kge_runtime;

namespace {

/// transe(Eemb[N_Eemb, D], Remb[N_Remb, D], h[B], t[B]) -> score[B]
Signature transe() {
  Signature s;
  s.name = "transe";
  s.params = {
      {"Eemb", ParamRole::Table, DType::F32,
       {Dim::named("N_Eemb"), Dim::named("D_Eemb")}, {}},
      {"Remb", ParamRole::Table, DType::F32,
       {Dim::named("N_Remb"), Dim::named("D_Eemb")}, {}},
      {"h", ParamRole::Indices, DType::I64, {Dim::named("B")}, {0}},
      {"r", ParamRole::Indices, DType::I32, {Dim::named("B")}, {1}},
      {"score", ParamRole::Result, DType::F32, {Dim::named("B")}, {}},
  };
  return s;
}

std::vector<ArrayDesc> goodArgs() {
  return {{DType::F32, {100, 8}},
          {DType::F32, {7, 8}},
          {DType::I64, {16}},
          {DType::I32, {16}}};
}

TEST(Signature, BindsEverySymbol) {
  Bindings bindings;
  std::string error;
  ASSERT_TRUE(bindArguments(transe(), goodArgs(), std::nullopt, bindings,
                            error))
      << error;
  EXPECT_EQ(bindings.lookup("B"), 16);
  EXPECT_EQ(bindings.lookup("N_Eemb"), 100);
  EXPECT_EQ(bindings.lookup("N_Remb"), 7);
  EXPECT_EQ(bindings.lookup("D_Eemb"), 8);
  EXPECT_EQ(bindings.lookup("nothing"), -1);
  EXPECT_EQ(bindings.shapeOf(transe().params[4]), std::vector<int64_t>{16});
}

TEST(Signature, RejectsArgumentCount) {
  Bindings bindings;
  std::string error;
  auto args = goodArgs();
  args.pop_back();
  EXPECT_FALSE(bindArguments(transe(), args, std::nullopt, bindings, error));
  EXPECT_EQ(error, "'transe' takes 4 arguments, got 3");
}

TEST(Signature, RejectsDTypeRankAndConflictingSizes) {
  struct Case {
    unsigned arg;
    ArrayDesc desc;
    std::string message;
  } cases[] = {
      {2, {DType::I32, {16}}, "indices 'h' expects dtype i64, got i32"},
      {0,
       {DType::F32, {100}},
       "table 'Eemb' expects rank 2 (shape [N_Eemb, D_Eemb]), got rank 1 "
       "(shape [100])"},
      {1,
       {DType::F32, {7, 9}},
       "table 'Remb' has size 9 in dimension 1 but 'D_Eemb' is 8 (set by "
       "'Eemb')"},
      {3,
       {DType::I32, {15}},
       "indices 'r' has size 15 in dimension 0 but 'B' is 16 (set by 'h')"},
      {0,
       {DType::F32, {-1, 8}},
       "table 'Eemb' has negative size -1 in dimension 0"},
  };
  for (const Case &c : cases) {
    auto args = goodArgs();
    args[c.arg] = c.desc;
    Bindings bindings;
    std::string error;
    EXPECT_FALSE(bindArguments(transe(), args, std::nullopt, bindings, error));
    EXPECT_EQ(error, c.message);
  }
}

TEST(Signature, StaticSizes) {
  Signature s = transe();
  s.params[0].shape[1] = Dim::fixed(8);
  auto args = goodArgs();
  args[0].shape = {100, 4};
  Bindings bindings;
  std::string error;
  EXPECT_FALSE(bindArguments(s, args, std::nullopt, bindings, error));
  EXPECT_EQ(error, "table 'Eemb' expects size 8 in dimension 1 (shape "
                   "[N_Eemb, 8]), got 4 (shape [100, 4])");
}

TEST(Signature, RequestedBatchSizeMustAgree) {
  Bindings bindings;
  std::string error;
  EXPECT_FALSE(bindArguments(transe(), goodArgs(), 5, bindings, error));
  EXPECT_EQ(error, "indices 'h' has size 16 in dimension 0 but 'B' is 5 (set "
                   "by 'the requested batch size')");
}

TEST(Signature, ChecksIndexRangesOfEveryIndexedTable) {
  Signature s = transe();
  Bindings bindings;
  std::string error;
  ASSERT_TRUE(bindArguments(s, goodArgs(), std::nullopt, bindings, error));
  std::vector<int64_t> h(16, 99);
  EXPECT_TRUE(checkIndexRange(s, bindings, 2, h.data(), error)) << error;
  h[11] = 100;
  EXPECT_FALSE(checkIndexRange(s, bindings, 2, h.data(), error));
  EXPECT_EQ(error, "index 100 at position 11 of 'h' is out of range for "
                   "table 'Eemb' with 100 rows");
  std::vector<int32_t> r(16, 0);
  r[0] = -3;
  EXPECT_FALSE(checkIndexRange(s, bindings, 3, r.data(), error));
  EXPECT_EQ(error, "index -3 at position 0 of 'r' is out of range for table "
                   "'Remb' with 7 rows");
}

TEST(Signature, ChecksResults) {
  Signature s = transe();
  Bindings bindings;
  std::string error;
  ASSERT_TRUE(bindArguments(s, goodArgs(), std::nullopt, bindings, error));
  EXPECT_TRUE(checkResults(s, bindings, {{DType::F32, {16}}}, error));
  EXPECT_FALSE(checkResults(s, bindings, {{DType::F32, {15}}}, error));
  EXPECT_EQ(error, "result 'score' expects shape [16], got [15]");
  EXPECT_FALSE(checkResults(s, bindings, {{DType::F64, {16}}}, error));
  EXPECT_EQ(error, "result 'score' expects dtype f32, got f64");
  EXPECT_FALSE(checkResults(s, bindings, {}, error));
  EXPECT_EQ(error, "'transe' returns 1 results, got 0 output arrays");
}

TEST(Signature, DTypeNames) {
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32,
                  DType::I64})
    EXPECT_EQ(parseDType(dtypeName(d)), d);
  EXPECT_EQ(parseDType("complex64"), std::nullopt);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
}

} // namespace
