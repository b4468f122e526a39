//===- RaiseLinalg.cpp - matmul-like linalg operations to tile.task -------===//

#include "Dialect/TileIterator/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"

namespace mlir {
namespace tile {
#define GEN_PASS_DEF_TILERAISELINALG
#include "Dialect/TileIterator/Transforms/Passes.h.inc"
} // namespace tile
} // namespace mlir

using namespace mlir;
using namespace mlir::tile;

/// The combiner of `op` (the operation that yields the new accumulator).
static std::optional<Combiner> combinerOf(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return Combiner::add;
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return Combiner::mul;
  if (isa<arith::MaximumFOp, arith::MaxSIOp>(op))
    return Combiner::max;
  if (isa<arith::MinimumFOp, arith::MinSIOp>(op))
    return Combiner::min;
  return std::nullopt;
}

/// Raises `op` to a tile.task if it is a matmul-like task; returns whether
/// it did.
static bool raise(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() != 3 ||
      op.getNumDpsInits() != 1 || op.getNumDpsInputs() == 0 ||
      op->getNumRegions() != 1 || op.getBlock() == nullptr)
    return false;
  // Loop positions of i, j (the parallel loops, in order) and k.
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> parallel, reduction;
  for (auto [d, it] : llvm::enumerate(iterators))
    (it == utils::IteratorType::parallel ? parallel : reduction).push_back(d);
  if (parallel.size() != 2 || reduction.size() != 1)
    return false;
  unsigned toTask[3];
  toTask[parallel[0]] = TaskOp::I;
  toTask[parallel[1]] = TaskOp::J;
  toTask[reduction[0]] = TaskOp::K;
  MLIRContext *ctx = op.getContext();
  auto permuted = [&](AffineMap map) -> AffineMap {
    SmallVector<AffineExpr> results;
    for (AffineExpr e : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(e);
      if (!dim)
        return AffineMap();
      results.push_back(getAffineDimExpr(toTask[dim.getPosition()], ctx));
    }
    return AffineMap::get(3, 0, results, ctx);
  };

  // The body: yield(combine(%out, v)) with v computed from the inputs.
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  if (yield.getNumOperands() != 1)
    return false;
  Operation *combineOp = yield.getOperand(0).getDefiningOp();
  BlockArgument out = body->getArgument(body->getNumArguments() - 1);
  if (!combineOp || combineOp->getBlock() != body ||
      combineOp->getNumOperands() != 2 || !combinerOf(combineOp))
    return false;
  Value v;
  if (combineOp->getOperand(0) == out)
    v = combineOp->getOperand(1);
  else if (combineOp->getOperand(1) == out)
    v = combineOp->getOperand(0);
  if (!v || !out.hasOneUse() || v == out)
    return false;

  SmallVector<Attribute> maps;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = permuted(op.getMatchingIndexingMap(input));
    auto type = dyn_cast<MemRefType>(input->get().getType());
    if (!map || !type)
      return false;
    maps.push_back(AffineMapAttr::get(map));
  }
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = permuted(op.getMatchingIndexingMap(init));
  if (!outMap)
    return false;

  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> inputs;
  for (OpOperand *input : op.getDpsInputOperands())
    inputs.push_back(input->get());
  auto task = TaskOp::create(
      b, loc, inputs, ValueRange{}, ValueRange{init->get()}, ValueRange{},
      b.getArrayAttr(maps), CombinerAttr::get(ctx, *combinerOf(combineOp)),
      OutputKindAttr::get(ctx, OutputKind::dense), TypedAttr(), UnitAttr(),
      CombinerAttr(), IntegerAttr(), UnitAttr(),
      // (i, j) is the default.
      outMap.getDimPosition(0) == TaskOp::I ? AffineMapAttr()
                                            : AffineMapAttr::get(outMap),
      b.getUnitAttr(), ArrayAttr());
  // The inner computation: the body without the combination, over the
  // inputs' elements.
  Block *inner = b.createBlock(&task.getInner());
  IRMapping mapping;
  for (unsigned n = 0; n < inputs.size(); ++n)
    mapping.map(body->getArgument(n), inner->addArgument(
                                          body->getArgument(n).getType(), loc));
  for (Operation &bodyOp : body->without_terminator())
    if (&bodyOp != combineOp)
      b.clone(bodyOp, mapping);
  YieldOp::create(b, loc, mapping.lookupOrDefault(v));
  if (failed(verify(task, /*verifyRecursively=*/true))) {
    // Not a matmul-like task after all (an operand kind the dialect
    // rejects, a body that reads values from outside): keep the linalg op.
    task.erase();
    return false;
  }
  op.erase();
  return true;
}

namespace {
struct TileRaiseLinalgPass
    : tile::impl::TileRaiseLinalgBase<TileRaiseLinalgPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation()->walk(
        [&](linalg::LinalgOp op) { candidates.push_back(op); });
    for (linalg::LinalgOp op : candidates) {
      // Diagnostics of a rejected candidate are not the user's errors.
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      (void)raise(op);
    }
  }
};
} // namespace
