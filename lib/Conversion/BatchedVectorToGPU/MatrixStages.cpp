//===- MatrixStages.cpp - vec_mul_mat over runs of shared matrices --------===//
//
// cuKE's bmv with its frequency-based caching of projection matrices
// (Sections V-A, VI): the inspector groups the tile's edges by matrix index
// and ranks the distinct matrices by frequency; the block then processes
// work items of (up to 4 edges of one run) x (one chunk of output columns),
// most frequent matrices first. A warp streams each row of its matrix chunk
// once and multiplies it with all 4 edges' input elements, so a matrix used
// by n edges of the tile is read ceil(n / 4) times from L1/L2 and once from
// memory. Sorting the batch by the matrix index (the launch plan's
// reordering) makes the runs long. Items of 4 edges rather than 8 or 16
// measured faster on H200 (bench/NOTES.md): more items keep more warps
// streaming, and the registers they free keep 16 rows in flight.
//
//===----------------------------------------------------------------------===//

#include "StageEmitters.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kge;

static constexpr int64_t kEdgesPerItem = 4;
// Matrix rows loaded before their products: 16 x 16-byte loads in flight
// per lane hide the memory latency of the streamed matrices.
static constexpr int64_t kUnroll = 16;

Value mlir::kge::sharedMatrixKey(Value matrix) {
  Value key;
  bool perEdge = false;
  std::function<void(Value)> walk = [&](Value v) {
    Operation *op = v.getDefiningOp();
    if (auto gather = dyn_cast<bvec::GatherMatOp>(op)) {
      if (key && key != gather.getIndices())
        perEdge = true;
      key = gather.getIndices();
      return;
    }
    if (isa<bvec::VecOuterVecOp>(op)) {
      perEdge = true;
      return;
    }
    for (Value operand : op->getOperands())
      walk(operand);
  };
  walk(matrix);
  return perEdge ? Value() : key;
}

Value MatrixStageEmitter::evaluate(Value matrix, const Context &c) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  ChunkLoopEmitter chunks(k);
  Operation *op = matrix.getDefiningOp();
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](bvec::GatherMatOp gather) -> Value {
        Value row = c.sharedRow;
        if (!row)
          row = k.keyOf(k.slotFor(gather.getIndices()), c.edge);
        return chunks.loadGlobalChunk(k.memrefOf(gather.getTable()),
                                      ValueRange{k.toIndex(row), c.k}, c.cols,
                                      c.colValid);
      })
      .Case([&](bvec::ConstantOp constant) -> Value {
        return k.splat(k.constF32(constant.getValue().convertToFloat()));
      })
      .Case([&](bvec::VecOuterVecOp outer) -> Value {
        Value lhs = k.materializedView(outer.getLhs());
        Value rhs = k.materializedView(outer.getRhs());
        Value at = arith::AddIOp::create(
            b, loc,
            arith::MulIOp::create(b, loc, c.edge,
                                  k.lengthValue(outer.getLhs())),
            c.k);
        Value scale = memref::LoadOp::create(b, loc, lhs, at);
        Value rowStart = arith::MulIOp::create(b, loc, c.edge,
                                               k.lengthValue(outer.getRhs()));
        Value columns = chunks.loadSharedChunk(
            rhs, arith::AddIOp::create(b, loc, rowStart, c.cols), c.colValid);
        return arith::MulFOp::create(b, loc, k.splat(scale), columns);
      })
      .Default([&](Operation *other) -> Value {
        SmallVector<Value> operands;
        for (Value operand : other->getOperands())
          operands.push_back(evaluate(operand, c));
        return chunks.applyElementwise(other, operands, false);
      });
}

void MatrixStageEmitter::emitProduct(bvec::VecMulMatOp op) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t width = k.layout.vectorWidth;
  int64_t chunk = 32 * width;
  Value input = k.materializedView(op.getVec());
  Value output = k.materializedView(op.getResult());
  Value inputLength = k.lengthValue(op.getVec());
  Value outputLength = k.lengthValue(op.getResult());
  Value key = sharedMatrixKey(op.getMat());
  InspectorSlot *slot = key ? &k.slotFor(key) : nullptr;

  Value zero = k.constIndex(0), one = k.constIndex(1);
  Value passes = arith::CeilDivUIOp::create(b, loc, outputLength,
                                            k.constIndex(chunk));
  Value runs = slot ? k.toIndex(slot->nuniq) : k.count;
  Value items = k.view("items", b.getI32Type(), k.layout.tile + 1);

  // Run r of the tile: its edges order[start, start + size) (with a shared
  // key), or the single local edge r.
  auto runOf = [&](Value r) -> std::pair<Value, Value> {
    if (!slot)
      return {r, one};
    Value u = k.toIndex(k.loadI32(slot->ranked, r));
    Value start = k.toIndex(k.loadI32(slot->offsets, u));
    Value end = k.toIndex(k.loadI32(
        slot->offsets, arith::AddIOp::create(b, loc, u, one)));
    return {start, arith::SubIOp::create(b, loc, end, start)};
  };
  auto groupsOf = [&](Value size) -> Value {
    return arith::CeilDivUIOp::create(b, loc, size,
                                      k.constIndex(kEdgesPerItem));
  };

  // Work-item offsets of the runs, most frequent first (one thread).
  Value isFirst =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k.tid, zero);
  scf::IfOp::create(b, loc, isFirst, [&](OpBuilder &, Location) {
    memref::StoreOp::create(b, loc, k.constI32(0), items, zero);
    scf::ForOp::create(
        b, loc, zero, runs, one, ValueRange{k.constIndex(0)},
        [&](OpBuilder &, Location, Value r, ValueRange args) {
          auto [start, size] = runOf(r);
          (void)start;
          Value total = arith::AddIOp::create(
              b, loc, args[0],
              arith::MulIOp::create(b, loc, groupsOf(size), passes));
          Value next = arith::AddIOp::create(b, loc, r, one);
          memref::StoreOp::create(b, loc, k.toI32(total), items,
                                  ValueRange{next});
          scf::YieldOp::create(b, loc, total);
        });
    scf::YieldOp::create(b, loc);
  });
  gpu::BarrierOp::create(b, loc);
  Value totalItems = k.toIndex(k.loadI32(items, runs));

  VectorType chunkType = k.chunkType();
  scf::ForOp::create(
      b, loc, k.warp, totalItems, k.constIndex(k.layout.warps), ValueRange{},
      [&](OpBuilder &, Location, Value item, ValueRange) {
        // The run holding this item: the last r with items[r] <= item.
        auto search = scf::WhileOp::create(
            b, loc, TypeRange{b.getIndexType()}, ValueRange{zero},
            [&](OpBuilder &, Location, ValueRange args) {
              Value next = arith::AddIOp::create(b, loc, args[0], one);
              Value bound = k.toIndex(k.loadI32(items, next));
              Value more = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ule, bound, item);
              scf::ConditionOp::create(b, loc, more, args);
            },
            [&](OpBuilder &, Location, ValueRange args) {
              scf::YieldOp::create(
                  b, loc, ValueRange{arith::AddIOp::create(b, loc, args[0], one)});
            });
        Value r = search.getResult(0);
        auto [start, size] = runOf(r);
        Value local = arith::SubIOp::create(
            b, loc, item, k.toIndex(k.loadI32(items, r)));
        Value groups = groupsOf(size);
        Value group = arith::RemUIOp::create(b, loc, local, groups);
        Value pass = arith::DivUIOp::create(b, loc, local, groups);

        // The item's edges; missing ones repeat the first and are not
        // stored.
        SmallVector<Value> edges, valid;
        Value base =
            arith::MulIOp::create(b, loc, group, k.constIndex(kEdgesPerItem));
        for (int64_t j = 0; j < kEdgesPerItem; ++j) {
          Value position = arith::AddIOp::create(b, loc, base, k.constIndex(j));
          Value isValid = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ult, position, size);
          Value safe = arith::SelectOp::create(b, loc, isValid, position, base);
          Value edge =
              slot ? k.toIndex(k.loadI32(
                         slot->order, arith::AddIOp::create(b, loc, start, safe)))
                   : start;
          edges.push_back(edge);
          valid.push_back(isValid);
        }
        Value sharedRow;
        if (slot) {
          Value u = k.toIndex(k.loadI32(slot->ranked, r));
          sharedRow = k.loadI32(slot->uniq, u);
        }
        Value cols = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, pass, k.constIndex(chunk)),
            arith::MulIOp::create(b, loc, k.lane, k.constIndex(width)));
        Value colValid = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, cols, outputLength);
        Value safeCols = arith::SelectOp::create(b, loc, colValid, cols, zero);
        SmallVector<Value> rowStarts;
        for (Value edge : edges)
          rowStarts.push_back(
              arith::MulIOp::create(b, loc, edge, inputLength));

        // acc[j] += x[edge_j][k] * M[k][cols], kUnroll rows at a time.
        auto accumulate = [&](Value kk, ValueRange acc,
                              int64_t rows) -> SmallVector<Value> {
          SmallVector<Value> matrixRows;
          SmallVector<Value> ks;
          for (int64_t u = 0; u < rows; ++u) {
            Value kRow = arith::AddIOp::create(b, loc, kk, k.constIndex(u));
            ks.push_back(kRow);
            matrixRows.push_back(
                evaluate(op.getMat(), {edges.front(), sharedRow, kRow,
                                       safeCols, colValid}));
          }
          SmallVector<Value> result(acc);
          // With 16-byte layouts the inputs are read 4 rows at a time (one
          // shared load per edge and 4 rows instead of 4).
          int64_t step = width == 4 && rows % 4 == 0 ? 4 : 1;
          auto xType = VectorType::get({step}, b.getF32Type());
          for (int64_t u = 0; u < rows; u += step)
            for (int64_t j = 0; j < kEdgesPerItem; ++j) {
              Value at = arith::AddIOp::create(b, loc, rowStarts[j], ks[u]);
              Value xs = alignedLoad(b, loc, xType, input, ValueRange{at},
                                     4 * step);
              for (int64_t q = 0; q < step; ++q) {
                Value x = vector::ExtractOp::create(b, loc, xs, q);
                result[j] = vector::FMAOp::create(b, loc, k.splat(x),
                                                  matrixRows[u + q], result[j]);
              }
            }
          return result;
        };
        SmallVector<Value> init(kEdgesPerItem, k.splat(k.constF32(0.0f)));
        Value mainEnd = arith::MulIOp::create(
            b, loc,
            arith::DivUIOp::create(b, loc, inputLength,
                                   k.constIndex(kUnroll)),
            k.constIndex(kUnroll));
        auto mainLoop = scf::ForOp::create(
            b, loc, zero, mainEnd, k.constIndex(kUnroll), init,
            [&](OpBuilder &, Location, Value kk, ValueRange acc) {
              scf::YieldOp::create(b, loc, accumulate(kk, acc, kUnroll));
            });
        auto tailLoop = scf::ForOp::create(
            b, loc, mainEnd, inputLength, one, mainLoop.getResults(),
            [&](OpBuilder &, Location, Value kk, ValueRange acc) {
              scf::YieldOp::create(b, loc, accumulate(kk, acc, 1));
            });
        (void)chunkType;

        for (int64_t j = 0; j < kEdgesPerItem; ++j) {
          Value store = arith::AndIOp::create(b, loc, valid[j], colValid);
          Value value = tailLoop.getResult(j);
          Value at = arith::AddIOp::create(
              b, loc, arith::MulIOp::create(b, loc, edges[j], outputLength),
              safeCols);
          scf::IfOp::create(b, loc, store, [&](OpBuilder &, Location) {
            alignedStore(b, loc, value, output, ValueRange{at}, 4 * width);
            scf::YieldOp::create(b, loc);
          });
        }
        scf::YieldOp::create(b, loc);
      });
}

void MatrixStageEmitter::emitMatrixResult(unsigned result, Value matrix) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t width = k.layout.vectorWidth;
  int64_t chunk = 32 * width;
  Value rows = k.dimValue(matrix, 1);
  Value cols = k.dimValue(matrix, 2);
  Value zero = k.constIndex(0), one = k.constIndex(1);
  int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
  for (int64_t i = 0; i < edgesPerWarp; ++i) {
    Value edge = k.localEdge(i);
    Value inTile =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, edge, k.count);
    Value resultRow = k.resultRow(edge);
    scf::ForOp::create(
        b, loc, zero, rows, one, ValueRange{},
        [&](OpBuilder &, Location, Value row, ValueRange) {
          scf::ForOp::create(
              b, loc, zero, cols, k.constIndex(chunk), ValueRange{},
              [&](OpBuilder &, Location, Value jj, ValueRange) {
                Value col = arith::AddIOp::create(
                    b, loc, jj,
                    arith::MulIOp::create(b, loc, k.lane,
                                          k.constIndex(width)));
                Value colValid = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::ult, col, cols);
                Value safe =
                    arith::SelectOp::create(b, loc, colValid, col, zero);
                Value value =
                    evaluate(matrix, {edge, Value(), row, safe, colValid});
                Value store = arith::AndIOp::create(b, loc, inTile, colValid);
                scf::IfOp::create(b, loc, store, [&](OpBuilder &, Location) {
                  alignedStore(b, loc, value, k.resultMemrefs[result], ValueRange{resultRow, row, safe}, 4 * width);
                  scf::YieldOp::create(b, loc);
                });
                scf::YieldOp::create(b, loc);
              });
          scf::YieldOp::create(b, loc);
        });
  }
}
