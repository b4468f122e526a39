//===- downstream-opt.cpp - a downstream mlir-opt embedding KGE -----------===//
//
// Registers KGE's dialects, passes and pipelines (mlir::kge::register*) and
// a pass of its own, `count-gathers`, which walks bvec.func bodies with
// KGE's C++ operation classes and annotates each function with the number
// of rows it gathers per edge.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"
#include "InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

using namespace mlir;

namespace {

struct CountGathersPass
    : public PassWrapper<CountGathersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CountGathersPass)

  StringRef getArgument() const final { return "count-gathers"; }
  StringRef getDescription() const final {
    return "annotate each bvec.func with its gathers per edge";
  }

  void runOnOperation() override {
    getOperation().walk([](bvec::FuncOp func) {
      int64_t vectors = 0, matrices = 0;
      func.walk([&](Operation *op) {
        if (isa<bvec::GatherVecOp>(op))
          ++vectors;
        else if (isa<bvec::GatherMatOp>(op))
          ++matrices;
      });
      Builder builder(func.getContext());
      func->setAttr("downstream.gathered_vectors",
                    builder.getI64IntegerAttr(vectors));
      func->setAttr("downstream.gathered_matrices",
                    builder.getI64IntegerAttr(matrices));
    });
  }
};

} // namespace

int main(int argc, char **argv) {
  DialectRegistry registry;
  kge::registerAllDialects(registry);
  kge::registerAllPasses();
  PassRegistration<CountGathersPass>();
  return asMainReturnCode(MlirOptMain(
      argc, argv, "A downstream compiler embedding KGE\n", registry));
}
