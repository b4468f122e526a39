//===- MatrixStages.cpp - vec_mul_mat over runs of shared matrices --------===//
//
// cuKE's bmv with its frequency-based caching of projection matrices
// (Sections V-A, VI): the inspector groups the tile's edges by matrix index
// and ranks the distinct matrices by frequency; the block then processes
// work items of (edges of one run) x (one chunk of output columns), most
// frequent matrices first. A warp streams each row of its matrix chunk once
// and multiplies it with all the item's edges. Sorting the batch by the
// matrix index (the launch plan's reordering) makes the runs long.
//
// Two kinds of items:
//   - tensor cores (layout matrix_math = "tf32x3", 16-byte layouts, runs of
//     more than 2 edges): up to 4 blocks of 8 edges (a whole tile of the
//     run) x 32 columns, mma.sync.m16n8k8 with TF32 operands, each FP32
//     operand split into two TF32 parts and multiplied three times (FP32
//     accuracy). A matrix used by n edges of the tile is read once per
//     32 edges.
//   - FP32 FMAs: 4 edges x 32 * V columns, each lane multiplying its V
//     columns of a matrix row with the 4 edges' input elements; 16 rows in
//     flight per lane. Items of 4 edges rather than 8 or 16 measured faster
//     on H200 (bench/NOTES.md): the registers they free keep the rows in
//     flight.
//
//===----------------------------------------------------------------------===//

#include "StageEmitters.h"

#include "Conversion/GPUCommon/TensorCores.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::kge;

static constexpr int64_t kEdgesPerItem = 4;
// Matrix rows loaded before their products: 16 x 16-byte loads in flight
// per lane hide the memory latency of the streamed matrices.
static constexpr int64_t kUnroll = 16;
// Tensor-core items: 8 edges (the n of mma.m16n8k8) x 32 columns (two
// products of 16 rows), 8 steps of 8 matrix rows loaded ahead.
static constexpr int64_t kMmaEdges = 8;
static constexpr int64_t kMmaColumns = 32;
static constexpr int64_t kMmaUnroll = 8;
// Items take up to 4 blocks of 8 edges of a run (a whole tile of up to 32
// edges), so that they read each matrix row once per tile.
static constexpr int64_t kMmaBlocks = 4;
// Runs of 1 or 2 edges multiply with FMAs: tensor-core items would compute
// 8 edges for them, and their 32-column items stream a matrix in 4 times as
// many items (measured slower on H200 at B = 4096, bench/NOTES.md).
static constexpr int64_t kMmaMinRun = 2;

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
                                  k.rowStrideValue(outer.getLhs())),
            c.k);
        Value scale = memref::LoadOp::create(b, loc, lhs, at);
        Value rowStart = arith::MulIOp::create(
            b, loc, c.edge, k.rowStrideValue(outer.getRhs()));
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
  Value outputLength = k.lengthValue(op.getResult());
  Value key = sharedMatrixKey(op.getMat());
  InspectorSlot *slot = key ? &k.slotFor(key) : nullptr;
  // Tensor cores pay off only when a matrix is shared by a run of edges;
  // their operand layout reads 4 consecutive columns per lane.
  bool tensorCores = slot && k.layout.vectorWidth == 4 &&
                     k.layout.matrixMath == "tf32x3";
  // A tensor-core item takes up to a tile's edges of a run (blocks of 8,
  // at most kMmaBlocks), so that it reads each matrix row once. Runs of at
  // most kMmaMinRun edges use FMA items.
  int64_t mmaBlocks =
      std::min<int64_t>(kMmaBlocks, llvm::divideCeil(k.layout.tile, kMmaEdges));
  int64_t fmaColumns = 32 * k.layout.vectorWidth;
  Value zero = k.constIndex(0), one = k.constIndex(1);
  // Deterministic products of a sorted batch: the edges of one matrix are
  // in the order the sort's atomics chose, so which of them a tile holds
  // varies between calls when their run continues into a neighbouring
  // tile. Such runs take tensor cores whatever their size in this tile, so
  // that an edge's arithmetic depends only on the sorted keys. The keys of
  // the scored edges just before and after the tile tell (-1: none).
  Value keyBefore, keyAfter;
  if (tensorCores && k.layout.deterministic && k.permMemref &&
      k.func.getArgumentByName(k.layout.reorderKey) == slot->indexArray) {
    Value total = memref::DimOp::create(b, loc, k.resultMemrefs.front(), 0);
    auto keyAt = [&](Value valid, Value position) -> Value {
      Value safe = arith::SelectOp::create(b, loc, valid, position, zero);
      Value positive = k.toIndex(k.loadI32(
          k.permMemref, arith::DivUIOp::create(b, loc, safe, k.negatives)));
      Value key = k.toI32(memref::LoadOp::create(
          b, loc, k.memrefOf(slot->indexArray), ValueRange{positive}));
      return arith::SelectOp::create(b, loc, valid, key, k.constI32(-1));
    };
    Value end = arith::AddIOp::create(b, loc, k.first, k.count);
    keyBefore = keyAt(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, k.first, zero),
        arith::SubIOp::create(b, loc, k.first, one));
    keyAfter = keyAt(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, end, total),
        end);
  }
  // How the items of a run of `size` edges with matrix `key` multiply: on
  // tensor cores or not, edges and columns per item, items per run.
  struct Shape {
    Value tensor, edges, columns, groups, items;
  };
  auto shapeOf = [&](Value size, Value key) -> Shape {
    Shape shape;
    shape.tensor =
        tensorCores
            ? arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, size,
                                    k.constIndex(kMmaMinRun))
            : arith::ConstantIntOp::create(b, loc, 0, 1).getResult();
    if (keyBefore) {
      auto equals = [&](Value other) {
        return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, key,
                                     other);
      };
      shape.tensor = arith::OrIOp::create(
          b, loc, shape.tensor,
          arith::OrIOp::create(b, loc, equals(keyBefore), equals(keyAfter)));
    }
    auto pick = [&](int64_t onTensor, int64_t onFma) -> Value {
      if (!tensorCores)
        return k.constIndex(onFma);
      return arith::SelectOp::create(b, loc, shape.tensor,
                                     k.constIndex(onTensor),
                                     k.constIndex(onFma));
    };
    shape.edges = pick(kMmaEdges * mmaBlocks, kEdgesPerItem);
    shape.columns = pick(kMmaColumns, fmaColumns);
    shape.groups = arith::CeilDivUIOp::create(b, loc, size, shape.edges);
    shape.items = arith::MulIOp::create(
        b, loc, shape.groups,
        arith::CeilDivUIOp::create(b, loc, outputLength, shape.columns));
    return shape;
  };
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
  // The matrix row of run r (i32), or null without a shared key.
  auto keyOfRun = [&](Value r) -> Value {
    if (!slot)
      return Value();
    return k.loadI32(slot->uniq, k.toIndex(k.loadI32(slot->ranked, r)));
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
              b, loc, args[0], shapeOf(size, keyOfRun(r)).items);
          Value next = arith::AddIOp::create(b, loc, r, one);
          memref::StoreOp::create(b, loc, k.toI32(total), items,
                                  ValueRange{next});
          scf::YieldOp::create(b, loc, total);
        });
    scf::YieldOp::create(b, loc);
  });
  gpu::BarrierOp::create(b, loc);
  Value totalItems = k.toIndex(k.loadI32(items, runs));

  scf::ForOp::create(
      b, loc, k.warp, totalItems, k.constIndex(k.layout.warps), ValueRange{},
      [&](OpBuilder &, Location, Value index, ValueRange) {
        // The run holding this item: the last r with items[r] <= index.
        auto search = scf::WhileOp::create(
            b, loc, TypeRange{b.getIndexType()}, ValueRange{zero},
            [&](OpBuilder &, Location, ValueRange args) {
              Value next = arith::AddIOp::create(b, loc, args[0], one);
              Value bound = k.toIndex(k.loadI32(items, next));
              Value more = arith::CmpIOp::create(
                  b, loc, arith::CmpIPredicate::ule, bound, index);
              scf::ConditionOp::create(b, loc, more, args);
            },
            [&](OpBuilder &, Location, ValueRange args) {
              scf::YieldOp::create(
                  b, loc, ValueRange{arith::AddIOp::create(b, loc, args[0], one)});
            });
        Value r = search.getResult(0);
        Item item;
        item.slot = slot;
        std::tie(item.start, item.size) = runOf(r);
        Value local = arith::SubIOp::create(
            b, loc, index, k.toIndex(k.loadI32(items, r)));
        item.sharedRow = keyOfRun(r);
        Shape shape = shapeOf(item.size, item.sharedRow);
        item.base = arith::MulIOp::create(
            b, loc, arith::RemUIOp::create(b, loc, local, shape.groups),
            shape.edges);
        item.firstColumn = arith::MulIOp::create(
            b, loc, arith::DivUIOp::create(b, loc, local, shape.groups),
            shape.columns);
        auto emitTensorCore = [&] {
          // Items whose edges fit one block of 8 skip the others' products.
          if (mmaBlocks == 1) {
            emitTensorCoreItem(op, item, 1);
            return;
          }
          Value rest = arith::SubIOp::create(b, loc, item.size, item.base);
          Value oneBlock = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::ule, rest,
              k.constIndex(kMmaEdges));
          scf::IfOp::create(
              b, loc, oneBlock,
              [&](OpBuilder &, Location) {
                emitTensorCoreItem(op, item, 1);
                scf::YieldOp::create(b, loc);
              },
              [&](OpBuilder &, Location) {
                emitTensorCoreItem(op, item, mmaBlocks);
                scf::YieldOp::create(b, loc);
              });
        };
        if (!tensorCores) {
          emitFmaItem(op, item);
        } else {
          scf::IfOp::create(
              b, loc, shape.tensor,
              [&](OpBuilder &, Location) {
                emitTensorCore();
                scf::YieldOp::create(b, loc);
              },
              [&](OpBuilder &, Location) {
                emitFmaItem(op, item);
                scf::YieldOp::create(b, loc);
              });
        }
        scf::YieldOp::create(b, loc);
      });
}

std::pair<Value, Value> MatrixStageEmitter::edgeAt(const Item &item,
                                                   Value position) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                      position, item.size);
  Value safe = arith::SelectOp::create(b, loc, valid, position, item.base);
  Value edge = item.slot
                   ? k.toIndex(k.loadI32(item.slot->order,
                                         arith::AddIOp::create(
                                             b, loc, item.start, safe)))
                   : item.start;
  return {edge, valid};
}

void MatrixStageEmitter::emitFmaItem(bvec::VecMulMatOp op, const Item &item) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  int64_t width = k.layout.vectorWidth;
  Value input = k.materializedView(op.getVec());
  Value output = k.materializedView(op.getResult());
  Value inputLength = k.lengthValue(op.getVec());
  Value zero = k.constIndex(0), one = k.constIndex(1);

  // The item's edges; missing ones repeat the first and are not stored.
  SmallVector<Value> edges, valid;
  for (int64_t j = 0; j < kEdgesPerItem; ++j) {
    auto [edge, isValid] = edgeAt(
        item, arith::AddIOp::create(b, loc, item.base, k.constIndex(j)));
    edges.push_back(edge);
    valid.push_back(isValid);
  }
  auto [colValid, safeCols] = columnsOf(
      op, item, arith::MulIOp::create(b, loc, k.lane, k.constIndex(width)));
  SmallVector<Value> rowStarts;
  for (Value edge : edges)
    rowStarts.push_back(arith::MulIOp::create(
        b, loc, edge, k.rowStrideValue(op.getVec())));

  // acc[j] += x[edge_j][k] * M[k][cols], kUnroll rows at a time.
  auto accumulate = [&](Value kk, ValueRange acc,
                        int64_t rows) -> SmallVector<Value> {
    SmallVector<Value> matrixRows;
    SmallVector<Value> ks;
    for (int64_t u = 0; u < rows; ++u) {
      Value kRow = arith::AddIOp::create(b, loc, kk, k.constIndex(u));
      ks.push_back(kRow);
      matrixRows.push_back(evaluate(
          op.getMat(), {edges.front(), item.sharedRow, kRow, safeCols,
                        colValid}));
    }
    SmallVector<Value> result(acc);
    // With 16-byte layouts the inputs are read 4 rows at a time (one
    // shared load per edge and 4 rows instead of 4).
    int64_t step = width == 4 && rows % 4 == 0 ? 4 : 1;
    auto xType = VectorType::get({step}, b.getF32Type());
    for (int64_t u = 0; u < rows; u += step)
      for (int64_t j = 0; j < kEdgesPerItem; ++j) {
        Value at = arith::AddIOp::create(b, loc, rowStarts[j], ks[u]);
        Value xs =
            alignedLoad(b, loc, xType, input, ValueRange{at}, 4 * step);
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
      arith::DivUIOp::create(b, loc, inputLength, k.constIndex(kUnroll)),
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

  for (int64_t j = 0; j < kEdgesPerItem; ++j)
    storeOutputRow(op, output, edges[j],
                   arith::AndIOp::create(b, loc, valid[j], colValid), safeCols,
                   tailLoop.getResult(j));
}

std::pair<Value, Value> MatrixStageEmitter::columnsOf(bvec::VecMulMatOp op,
                                                     const Item &item,
                                                     Value laneOffset) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value cols = arith::AddIOp::create(b, loc, item.firstColumn, laneOffset);
  Value valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, cols,
                                      k.lengthValue(op.getResult()));
  return {valid,
          arith::SelectOp::create(b, loc, valid, cols, k.constIndex(0))};
}

void MatrixStageEmitter::storeOutputRow(bvec::VecMulMatOp op, Value output,
                                        Value edge, Value store, Value cols,
                                        Value value) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value at = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, edge, k.rowStrideValue(op.getResult())),
      cols);
  scf::IfOp::create(b, loc, store, [&](OpBuilder &, Location) {
    alignedStore(b, loc, value, output, ValueRange{at},
                 4 * cast<VectorType>(value.getType()).getNumElements());
    scf::YieldOp::create(b, loc);
  });
}

std::pair<Value, Value> MatrixStageEmitter::splitTF32(Value value) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Type intType = b.getI32Type();
  if (auto vector = dyn_cast<VectorType>(value.getType()))
    intType = VectorType::get(vector.getShape(), intType);
  // The shared emitter's split; NVVM's mma takes TF32 operands as bits.
  auto [big, rest] = kge::splitTF32(b, loc, value);
  return {arith::BitcastOp::create(b, loc, intType, big),
          arith::BitcastOp::create(b, loc, intType, rest)};
}

void MatrixStageEmitter::emitTensorCoreItem(bvec::VecMulMatOp op,
                                            const Item &item,
                                            int64_t blocks) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  Value input = k.materializedView(op.getVec());
  Value output = k.materializedView(op.getResult());
  Value inputLength = k.lengthValue(op.getVec());
  Type f32 = b.getF32Type();
  Value zero = k.constIndex(0);

  // mma.m16n8k8 (row, col), TF32 operands, FP32 accumulators: lane
  // (g, t) = (lane / 4, lane % 4) holds A[g][t], A[g + 8][t], A[g][t + 4],
  // A[g + 8][t + 4], B[t][g], B[t + 4][g] and C[g][2t], C[g][2t + 1],
  // C[g + 8][2t], C[g + 8][2t + 1]. The product is transposed,
  // Y^T = M^T X^T: the 8 columns of B (and C) are 8 edges of the item (one
  // block of them), the rows of A (and C) columns of the matrix. Lane
  // (g, t) loads the 4 columns 4g..4g+3 of matrix rows k + t and
  // k + 4 + t with two 16-byte loads; columns 4g, 4g + 1 are rows g, g + 8
  // of the first product, 4g + 2, 4g + 3 those of the second, so the lane
  // ends with 4 consecutive output columns of edges 2t and 2t + 1 of every
  // block. The matrix operands of a step serve all the item's blocks.
  Value g = arith::ShRUIOp::create(b, loc, k.lane, k.constIndex(2));
  Value t = arith::AndIOp::create(b, loc, k.lane, k.constIndex(3));
  Value twoT = arith::MulIOp::create(b, loc, t, k.constIndex(2));
  auto [colValid, safeCols] =
      columnsOf(op, item, arith::MulIOp::create(b, loc, g, k.constIndex(4)));
  Value inputStride = k.rowStrideValue(op.getVec());
  // Block j: the lane's input row (edge 8j + g of the item) and its two
  // output edges (8j + 2t, 8j + 2t + 1).
  struct Block {
    Value xRow, edge0, valid0, edge1, valid1;
  };
  SmallVector<Block> blockInfo;
  for (int64_t j = 0; j < blocks; ++j) {
    Value first = arith::AddIOp::create(b, loc, item.base,
                                        k.constIndex(kMmaEdges * j));
    auto at = [&](Value offset) {
      return arith::AddIOp::create(b, loc, first, offset);
    };
    Block block;
    block.xRow = arith::MulIOp::create(b, loc, edgeAt(item, at(g)).first,
                                       inputStride);
    std::tie(block.edge0, block.valid0) = edgeAt(item, at(twoT));
    std::tie(block.edge1, block.valid1) = edgeAt(
        item, at(arith::AddIOp::create(b, loc, twoT, k.constIndex(1))));
    blockInfo.push_back(block);
  }

  // The lane's operands of one step of 8 matrix rows from `kk`: rows
  // kk + t and kk + 4 + t of its 4 columns. The blocks' inputs are read
  // from shared memory when multiplied (fewer live registers than loading
  // them ahead), so the step keeps the two rows and, for masked steps
  // (rows past the input length are zero), whether they exist.
  struct Step {
    Value matrix[2], rows[2], valid[2];
  };
  auto loadStep = [&](Value kk, bool masked) -> Step {
    Step step;
    step.rows[0] = arith::AddIOp::create(b, loc, kk, t);
    step.rows[1] = arith::AddIOp::create(
        b, loc, kk, arith::AddIOp::create(b, loc, t, k.constIndex(4)));
    for (int h = 0; h < 2; ++h) {
      if (masked) {
        step.valid[h] = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, step.rows[h], inputLength);
        step.rows[h] =
            arith::SelectOp::create(b, loc, step.valid[h], step.rows[h], zero);
      }
      Value a = evaluate(op.getMat(), {zero, item.sharedRow, step.rows[h],
                                       safeCols, colValid});
      if (masked)
        a = arith::SelectOp::create(b, loc, step.valid[h], a,
                                    k.splat(k.constF32(0.0f)));
      step.matrix[h] = a;
    }
    return step;
  };

  // 3xTF32: with a = a1 + a2 and x = x1 + x2 split into TF32 parts,
  // a x ~ a2 x1 + a1 x2 + a1 x1 (small terms first), FP32-accurate.
  auto resultType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {f32, f32, f32, f32});
  auto accumulate = [&](const Step &step,
                        SmallVector<Value> acc) -> SmallVector<Value> {
    auto [loBig, loSmall] = splitTF32(step.matrix[0]);
    auto [hiBig, hiSmall] = splitTF32(step.matrix[1]);
    auto fragment = [&](Value lo, Value hi, int64_t half) {
      return SmallVector<Value>{
          vector::ExtractOp::create(b, loc, lo, 2 * half),
          vector::ExtractOp::create(b, loc, lo, 2 * half + 1),
          vector::ExtractOp::create(b, loc, hi, 2 * half),
          vector::ExtractOp::create(b, loc, hi, 2 * half + 1)};
    };
    SmallVector<Value> big[2] = {fragment(loBig, hiBig, 0),
                                 fragment(loBig, hiBig, 1)};
    SmallVector<Value> small[2] = {fragment(loSmall, hiSmall, 0),
                                   fragment(loSmall, hiSmall, 1)};
    auto xOf = [&](int64_t j, int64_t h) -> Value {
      Value x = memref::LoadOp::create(
          b, loc, input,
          ValueRange{arith::AddIOp::create(b, loc, blockInfo[j].xRow,
                                           step.rows[h])});
      if (step.valid[h])
        x = arith::SelectOp::create(b, loc, step.valid[h], x,
                                    k.constF32(0.0f));
      return x;
    };
    for (int64_t j = 0; j < blocks; ++j) {
      auto [xLoBig, xLoSmall] = splitTF32(xOf(j, 0));
      auto [xHiBig, xHiSmall] = splitTF32(xOf(j, 1));
      for (int64_t half = 0; half < 2; ++half) {
        int64_t first = 8 * j + 4 * half;
        auto mma = [&](ArrayRef<Value> a, ArrayRef<Value> xs) {
          SmallVector<Value> c(acc.begin() + first, acc.begin() + first + 4);
          Value d = NVVM::MmaOp::create(
              b, loc, resultType, a, xs, c, ArrayRef<int64_t>{16, 8, 8},
              std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32,
                                            NVVM::MMATypes::tf32},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t i = 0; i < 4; ++i)
            acc[first + i] = LLVM::ExtractValueOp::create(b, loc, d, i);
        };
        mma(small[half], {xLoBig, xHiBig});
        mma(big[half], {xLoSmall, xHiSmall});
        mma(big[half], {xLoBig, xHiBig});
      }
    }
    return acc;
  };

  SmallVector<Value> init(8 * blocks, k.constF32(0.0f));
  int64_t span = 8 * kMmaUnroll;
  Value mainEnd = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, inputLength, k.constIndex(span)),
      k.constIndex(span));
  auto mainLoop = scf::ForOp::create(
      b, loc, zero, mainEnd, k.constIndex(span), init,
      [&](OpBuilder &, Location, Value kk, ValueRange acc) {
        // Every load of the unrolled steps before their products.
        SmallVector<Step> steps;
        for (int64_t u = 0; u < kMmaUnroll; ++u)
          steps.push_back(loadStep(
              arith::AddIOp::create(b, loc, kk, k.constIndex(8 * u)), false));
        // The mma chain of a block starts from zero and its sum is added to
        // the running one with an FP32 add: chaining all steps through the
        // tensor cores' accumulator measured 8x the error against PyTorch
        // (2.0e-6 vs 2.5e-7 for TransR, D = 512; bench/NOTES.md).
        SmallVector<Value> result(init);
        for (const Step &step : steps)
          result = accumulate(step, result);
        for (auto [sum, part] : llvm::zip(result, acc))
          sum = arith::AddFOp::create(b, loc, part, sum);
        scf::YieldOp::create(b, loc, result);
      });
  // The last steps (at most 7, masked) chain from zero as well.
  auto tailLoop = scf::ForOp::create(
      b, loc, mainEnd, inputLength, k.constIndex(8), init,
      [&](OpBuilder &, Location, Value kk, ValueRange acc) {
        scf::YieldOp::create(b, loc, accumulate(loadStep(kk, true),
                                                SmallVector<Value>(acc)));
      });
  SmallVector<Value> sums;
  for (auto [main, tail] :
       llvm::zip(mainLoop.getResults(), tailLoop.getResults()))
    sums.push_back(arith::AddFOp::create(b, loc, main, tail));

  // Edge 2t of block j: C[g][2t], C[g + 8][2t] of both products; edge
  // 2t + 1 the odd columns.
  for (int64_t j = 0; j < blocks; ++j) {
    auto row = [&](int64_t parity) {
      SmallVector<Value> elements;
      for (int64_t half = 0; half < 2; ++half)
        for (int64_t i : {parity, parity + 2})
          elements.push_back(sums[8 * j + 4 * half + i]);
      return vector::FromElementsOp::create(
          b, loc, VectorType::get({4}, f32), elements);
    };
    const Block &block = blockInfo[j];
    storeOutputRow(op, output, block.edge0,
                   arith::AndIOp::create(b, loc, block.valid0, colValid),
                   safeCols, row(0));
    storeOutputRow(op, output, block.edge1,
                   arith::AndIOp::create(b, loc, block.valid1, colValid),
                   safeCols, row(1));
  }
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

void MatrixStageEmitter::emitTransposedProduct(bvec::MatMulVecOp op) {
  OpBuilder &b = k.b;
  Location loc = k.loc;
  ChunkLoopEmitter chunks(k);
  int64_t width = k.layout.vectorWidth;
  int64_t edgesPerWarp = k.layout.tile / k.layout.warps;
  Value input = k.materializedView(op.getVec());
  Value output = k.materializedView(op.getResult());
  Value rows = k.dimValue(op.getMat(), 1);
  Value columns = k.dimValue(op.getMat(), 2);
  Value laneOffset =
      arith::MulIOp::create(b, loc, k.lane, k.constIndex(width));
  Value isLane0 = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        k.lane, k.constIndex(0));
  for (int64_t i = 0; i < edgesPerWarp; ++i) {
    Value edge = k.localEdge(i);
    Value inputRow =
        arith::MulIOp::create(b, loc, edge, k.rowStrideValue(op.getVec()));
    Value outputRow =
        arith::MulIOp::create(b, loc, edge, k.rowStrideValue(op.getResult()));
    scf::ForOp::create(
        b, loc, k.constIndex(0), rows, k.constIndex(1), ValueRange{},
        [&](OpBuilder &, Location, Value row, ValueRange) {
          auto chunkLoop = scf::ForOp::create(
              b, loc, k.constIndex(0), columns, k.constIndex(32 * width),
              ValueRange{k.splat(k.constF32(0.0f))},
              [&](OpBuilder &, Location, Value jj, ValueRange acc) {
                Value cols = arith::AddIOp::create(b, loc, jj, laneOffset);
                Value valid = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::ult, cols, columns);
                Context context{edge, Value(), row, cols, valid};
                Value m = evaluate(op.getMat(), context);
                Value v = chunks.loadSharedChunk(
                    input, arith::AddIOp::create(b, loc, inputRow, cols),
                    valid);
                Value product = arith::MulFOp::create(b, loc, m, v);
                scf::YieldOp::create(
                    b, loc,
                    ValueRange{arith::AddFOp::create(b, loc, acc[0], product)});
              });
          Value partial = chunkLoop.getResult(0);
          if (auto vector = dyn_cast<VectorType>(partial.getType()))
            partial = vector::ReductionOp::create(
                b, loc, vector::CombiningKind::ADD, partial);
          Value total = k.warpAllReduce(partial, bvec::ReductionKind::sum);
          scf::IfOp::create(b, loc, isLane0, [&](OpBuilder &, Location) {
            memref::StoreOp::create(
                b, loc, total, output,
                ValueRange{arith::AddIOp::create(b, loc, outputRow, row)});
            scf::YieldOp::create(b, loc);
          });
          scf::YieldOp::create(b, loc);
        });
  }
}
