//===- BatchedVectorToSCF.h - bvec to loops ---------------------*- C++ -*-===//

#ifndef KGE_CONVERSION_BATCHEDVECTORTOSCF_BATCHEDVECTORTOSCF_H
#define KGE_CONVERSION_BATCHEDVECTORTOSCF_BATCHEDVECTORTOSCF_H

#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace kge {

#define GEN_PASS_DECL_CONVERTBATCHEDVECTORTOSCF
#include "Conversion/Passes.h.inc"

/// Maps bvec types to memrefs: `!bvec.table<NxD>` -> `memref<NxD>`,
/// `!bvec.vec<BxD>` -> `memref<BxD>`, `!bvec.indices<BxiN>` ->
/// `memref<BxiN>`, and so on (the batch becomes the leading dimension).
class BatchedVectorToMemRefTypeConverter : public TypeConverter {
public:
  BatchedVectorToMemRefTypeConverter();
};

/// Whether `op` is an elementwise bvec operation (add, sub, mul, div, max,
/// min, neg, abs, exp, log, sqrt, tanh, sigmoid, sin, cos).
bool isElementwiseOp(Operation *op);

/// One element of the elementwise bvec operation `op` computed from one
/// element of each operand (`elements`, in order): its reference semantics,
/// which the loop lowering and the translation to tile tasks share.
Value emitElementwise(OpBuilder &builder, Location loc, Operation *op,
                      ValueRange elements);

/// Patterns lowering `bvec.func`, `bvec.return` and the gather operations.
void populateBatchedVectorFuncAndGatherToSCFPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns);
/// Patterns lowering constants and elementwise operations.
void populateBatchedVectorElementwiseToSCFPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns);
/// Patterns lowering products, norms, reductions and slices.
void populateBatchedVectorProductToSCFPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns);

/// All patterns of `convert-bvec-to-scf`.
void populateBatchedVectorToSCFConversionPatterns(
    const TypeConverter &typeConverter, RewritePatternSet &patterns);

} // namespace kge
} // namespace mlir

#endif // KGE_CONVERSION_BATCHEDVECTORTOSCF_BATCHEDVECTORTOSCF_H
