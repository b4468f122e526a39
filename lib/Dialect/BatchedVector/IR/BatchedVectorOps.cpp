//===- BatchedVectorOps.cpp - bvec operations -----------------------------===//
//
// Verifiers and custom assembly of the bvec operations. Folders and
// canonicalization patterns live in BatchedVectorFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "Dialect/BatchedVector/IR/BatchedVectorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

using namespace mlir;
using namespace mlir::bvec;

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

/// Checks that all batched `types` share one batch size. `roles` names each
/// value in the diagnostic ("indices", "result", ...).
static LogicalResult verifySameBatch(Operation *op, ArrayRef<Type> types,
                                     ArrayRef<StringRef> roles) {
  int64_t first = cast<BatchedType>(types.front()).getBatchSize();
  for (auto [type, role] : llvm::zip_equal(types, roles)) {
    int64_t batch = cast<BatchedType>(type).getBatchSize();
    if (batch != first)
      return op->emitOpError()
             << "batch size " << dimToString(batch) << " of the " << role
             << " differs from batch size " << dimToString(first) << " of the "
             << roles.front();
  }
  return success();
}

/// Checks that all `types` (batched values or tables) share the element type
/// of the first.
static LogicalResult verifySameElementType(Operation *op, ArrayRef<Type> types,
                                           ArrayRef<StringRef> roles) {
  auto elementTypeOf = [](Type type) -> Type {
    if (auto table = dyn_cast<TableType>(type))
      return table.getElementType();
    return cast<BatchedType>(type).getElementType();
  };
  Type first = elementTypeOf(types.front());
  for (auto [type, role] : llvm::zip_equal(types, roles)) {
    if (elementTypeOf(type) != first)
      return op->emitOpError()
             << "element type " << elementTypeOf(type) << " of the " << role
             << " differs from element type " << first << " of the "
             << roles.front();
  }
  return success();
}

/// Checks that `actual` equals `expected` for a named dimension.
static LogicalResult verifyDim(Operation *op, int64_t actual, int64_t expected,
                               const Twine &what, const Twine &expectedWhat) {
  if (actual == expected)
    return success();
  return op->emitOpError() << what << " " << dimToString(actual)
                           << " does not match " << expectedWhat << " "
                           << dimToString(expected);
}

//===----------------------------------------------------------------------===//
// FuncOp
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type, ArrayRef<StringRef> argNames,
                   ArrayRef<StringRef> resultNames) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.addAttribute(getArgNamesAttrName(state.name),
                     builder.getStrArrayAttr(argNames));
  state.addAttribute(getResultNamesAttrName(state.name),
                     builder.getStrArrayAttr(resultNames));
  Region *body = state.addRegion();
  Block *entry = new Block();
  body->push_back(entry);
  for (Type input : type.getInputs())
    entry->addArgument(input, state.location);
}

BlockArgument FuncOp::getArgumentByName(StringRef name) {
  for (unsigned i = 0, e = getNumArguments(); i < e; ++i)
    if (getArgName(i) == name)
      return getArgument(i);
  return {};
}

int64_t FuncOp::getBatchSize() {
  for (Type type : getArgumentTypes())
    if (auto batched = dyn_cast<BatchedType>(type))
      return batched.getBatchSize();
  return cast<BatchedType>(getResultTypes().front()).getBatchSize();
}

void FuncOp::getAsmBlockArgumentNames(Region &region,
                                      OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  ArrayAttr names = getArgNamesAttr();
  if (!names)
    return;
  for (auto [arg, name] : llvm::zip(region.front().getArguments(), names))
    setNameFn(arg, cast<StringAttr>(name).getValue());
}

/// An identifier usable as a parameter name in the manifest, C and Python.
static bool isIdentifier(StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name,
                      [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  (void)mlir::impl::parseOptionalVisibilityKeyword(parser, result.attributes);
  StringAttr nameAttr;
  if (parser.parseSymbolName(nameAttr, SymbolTable::getSymbolAttrName(),
                             result.attributes))
    return failure();

  // Arguments: `(%name: type, ...)`; the SSA names are the parameter names.
  SmallVector<OpAsmParser::Argument> args;
  if (parser.parseArgumentList(args, OpAsmParser::Delimiter::Paren,
                               /*allowType=*/true, /*allowAttrs=*/false))
    return failure();
  SmallVector<Attribute> argNames;
  SmallVector<Type> argTypes;
  for (OpAsmParser::Argument &arg : args) {
    StringRef name = arg.ssaName.name.drop_front(); // drop '%'
    if (!isIdentifier(name))
      return parser.emitError(arg.ssaName.location)
             << "argument name '" << arg.ssaName.name
             << "' must be an identifier (it names a parameter of the score "
                "function)";
    argNames.push_back(builder.getStringAttr(name));
    argTypes.push_back(arg.type);
  }

  // Results: `-> (name: type, ...)`.
  SmallVector<Attribute> resultNames;
  SmallVector<Type> resultTypes;
  if (parser.parseArrow())
    return failure();
  auto parseResult = [&]() -> ParseResult {
    std::string name;
    Type type;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeywordOrString(&name) || parser.parseColonType(type))
      return failure();
    if (!isIdentifier(name))
      return parser.emitError(loc)
             << "result name '" << name << "' must be an identifier";
    resultNames.push_back(builder.getStringAttr(name));
    resultTypes.push_back(type);
    return success();
  };
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren,
                                     parseResult))
    return failure();

  result.addAttribute(getFunctionTypeAttrName(result.name),
                      TypeAttr::get(builder.getFunctionType(argTypes,
                                                            resultTypes)));
  result.addAttribute(getArgNamesAttrName(result.name),
                      builder.getArrayAttr(argNames));
  result.addAttribute(getResultNamesAttrName(result.name),
                      builder.getArrayAttr(resultNames));
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  Region *body = result.addRegion();
  SMLoc bodyLoc = parser.getCurrentLocation();
  if (parser.parseRegion(*body, args, /*enableNameShadowing=*/false))
    return failure();
  if (body->empty())
    return parser.emitError(bodyLoc, "bvec.func requires a body");
  return success();
}

void FuncOp::print(OpAsmPrinter &p) {
  p << ' ';
  if (std::optional<StringRef> visibility = getSymVisibility())
    p << *visibility << ' ';
  p.printSymbolName(getSymName());
  p << '(';
  llvm::interleaveComma(getArguments(), p, [&](BlockArgument arg) {
    p.printRegionArgument(arg);
  });
  p << ") -> (";
  llvm::interleaveComma(llvm::seq<unsigned>(0, getNumResults()), p,
                        [&](unsigned i) {
                          p << getResultName(i) << ": " << getResultTypes()[i];
                        });
  p << ')';
  p.printOptionalAttrDictWithKeyword(
      (*this)->getAttrs(),
      {getSymNameAttrName(), getFunctionTypeAttrName(), getArgNamesAttrName(),
       getResultNamesAttrName(), getSymVisibilityAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

LogicalResult FuncOp::verify() {
  FunctionType type = getFunctionType();
  if (getArgNames().size() != type.getNumInputs())
    return emitOpError() << "has " << getArgNames().size()
                         << " argument names for " << type.getNumInputs()
                         << " arguments";
  if (getResultNames().size() != type.getNumResults())
    return emitOpError() << "has " << getResultNames().size()
                         << " result names for " << type.getNumResults()
                         << " results";
  if (type.getNumResults() == 0)
    return emitOpError() << "must return at least one batch";

  llvm::StringSet<> seen;
  auto checkName = [&](StringRef name, StringRef what) -> LogicalResult {
    if (!isIdentifier(name))
      return emitOpError() << what << " name '" << name
                           << "' must be an identifier";
    if (!seen.insert(name).second)
      return emitOpError() << "parameter name '" << name
                           << "' is used more than once";
    return success();
  };

  SmallVector<Type> batched;
  SmallVector<std::string> roles;
  for (unsigned i = 0, e = type.getNumInputs(); i < e; ++i) {
    Type argType = type.getInput(i);
    if (failed(checkName(getArgName(i), "argument")))
      return failure();
    if (!isa<TableType, IndicesType, ScalarType>(argType))
      return emitOpError() << "argument '" << getArgName(i)
                           << "' must be a !bvec.table, !bvec.indices or "
                              "!bvec.scalar, got "
                           << argType;
    if (isa<IndicesType>(argType)) {
      batched.push_back(argType);
      roles.push_back(("index array '" + getArgName(i) + "'").str());
    } else if (isa<ScalarType>(argType)) {
      batched.push_back(argType);
      roles.push_back(("per-edge input '" + getArgName(i) + "'").str());
    }
  }
  for (unsigned i = 0, e = type.getNumResults(); i < e; ++i) {
    Type resultType = type.getResult(i);
    if (failed(checkName(getResultName(i), "result")))
      return failure();
    if (!isa<ScalarType, VecType, MatType>(resultType))
      return emitOpError() << "result '" << getResultName(i)
                           << "' must be a !bvec.scalar, !bvec.vec or "
                              "!bvec.mat, got "
                           << resultType;
    batched.push_back(resultType);
    roles.push_back(("result '" + getResultName(i) + "'").str());
  }
  int64_t batch = cast<BatchedType>(batched.front()).getBatchSize();
  for (auto [t, role] : llvm::zip(batched, roles))
    if (cast<BatchedType>(t).getBatchSize() != batch)
      return emitOpError() << "batch size "
                           << dimToString(cast<BatchedType>(t).getBatchSize())
                           << " of the " << role << " differs from batch size "
                           << dimToString(batch) << " of the "
                           << roles.front()
                           << "; all batches of a function have one size";
  return success();
}

LogicalResult FuncOp::verifyRegions() {
  // FunctionOpInterface checks the entry block against the signature.
  // Every batched value computed in the body shares the function's batch.
  int64_t batch = getBatchSize();
  WalkResult walkResult = getBody().walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      auto batched = dyn_cast<BatchedType>(result.getType());
      if (!batched || batched.getBatchSize() == batch)
        continue;
      op->emitOpError() << "produces a batch of size "
                        << dimToString(batched.getBatchSize())
                        << " in a function whose batch size is "
                        << dimToString(batch);
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(walkResult.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// ReturnOp
//===----------------------------------------------------------------------===//

LogicalResult ReturnOp::verify() {
  auto func = cast<FuncOp>((*this)->getParentOp());
  ArrayRef<Type> results = func.getResultTypes();
  if (getNumOperands() != results.size())
    return emitOpError() << "returns " << getNumOperands()
                         << " values but the function declares "
                         << results.size() << " results";
  for (auto [i, operand, expected] :
       llvm::enumerate(getOperandTypes(), results))
    if (operand != expected)
      return emitOpError() << "type " << operand << " of returned value #" << i
                           << " does not match result '"
                           << func.getResultName(i) << "' of type "
                           << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

/// A gather gives rows of the table's element type, or widens rows of a
/// half-precision table (f16, bf16) to f32.
static LogicalResult verifyGatheredElementType(Operation *op, TableType table,
                                               BatchedType result) {
  Type from = table.getElementType(), to = result.getElementType();
  if (from == to || (isa<Float16Type, BFloat16Type>(from) && to.isF32()))
    return success();
  return op->emitOpError() << "gives element type " << to << " from a table of "
                           << from << "; expected " << from
                           << (isa<Float16Type, BFloat16Type>(from)
                                   ? " or f32 (widened)"
                                   : "");
}

LogicalResult GatherVecOp::verify() {
  TableType table = getTable().getType();
  if (!table.holdsVectors())
    return emitOpError() << "expects a table of vectors (rank 2), got "
                         << table << "; use bvec.gather_mat for matrices";
  VecType result = getResult().getType();
  if (failed(verifyDim(*this, result.getLength(), table.getShape()[1],
                       "result length", "the table's row length")) ||
      failed(verifyGatheredElementType(*this, table, result)) ||
      failed(verifySameBatch(*this, {getIndices().getType(), result},
                             {"indices", "result"})))
    return failure();
  return success();
}

LogicalResult GatherMatOp::verify() {
  TableType table = getTable().getType();
  if (table.holdsVectors())
    return emitOpError() << "expects a table of matrices (rank 3), got "
                         << table << "; use bvec.gather_vec for vectors";
  MatType result = getResult().getType();
  if (failed(verifyDim(*this, result.getRows(), table.getShape()[1],
                       "result row count", "the table's row count")) ||
      failed(verifyDim(*this, result.getCols(), table.getShape()[2],
                       "result column count", "the table's column count")) ||
      failed(verifyGatheredElementType(*this, table, result)) ||
      failed(verifySameBatch(*this, {getIndices().getType(), result},
                             {"indices", "result"})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

void ConstantOp::build(OpBuilder &builder, OperationState &state, Type type,
                       double value) {
  Type elementType = cast<BatchedType>(type).getElementType();
  build(builder, state, type, builder.getFloatAttr(elementType, value));
}

ParseResult ConstantOp::parse(OpAsmParser &parser, OperationState &result) {
  double value;
  Type type;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseFloat(value) ||
      parser.parseOptionalAttrDict(result.attributes) ||
      parser.parseColonType(type))
    return failure();
  auto batched = dyn_cast<BatchedType>(type);
  if (!batched || !isa<FloatType>(batched.getElementType()))
    return parser.emitError(loc)
           << "bvec.constant expects a batch of scalars, vectors or "
              "matrices, got "
           << type;
  result.addAttribute(getValueAttrName(result.name),
                      parser.getBuilder().getFloatAttr(
                          batched.getElementType(), value));
  result.addTypes(type);
  return success();
}

void ConstantOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printFloat(getValue());
  p.printOptionalAttrDict((*this)->getAttrs(), {getValueAttrName()});
  p << " : " << getType();
}

bool ConstantOp::isMaterializable(Type type) {
  if (!isa<ScalarType, VecType, MatType>(type))
    return false;
  return llvm::none_of(cast<BatchedType>(type).getItemShape(),
                       ShapedType::isDynamic);
}

LogicalResult ConstantOp::verify() {
  // Dynamic item sizes are those of the values the constant is combined
  // with (the signature analysis unifies them).
  auto type = cast<BatchedType>(getType());
  Type elementType = type.getElementType();
  if (getValueAttr().getType() != elementType)
    return emitOpError() << "value of type " << getValueAttr().getType()
                         << " does not match the element type " << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// Batched products
//===----------------------------------------------------------------------===//

LogicalResult ScalMulVecOp::verify() {
  if (getVec().getType() != getResult().getType())
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal the vector type "
                         << getVec().getType();
  if (failed(verifySameBatch(*this, {getScalar().getType(), getVec().getType()},
                             {"scalar", "vector"})) ||
      failed(verifySameElementType(
          *this, {getScalar().getType(), getVec().getType()},
          {"scalar", "vector"})))
    return failure();
  return success();
}

LogicalResult VecMulVecOp::verify() {
  VecType lhs = getLhs().getType(), rhs = getRhs().getType();
  ScalarType result = getResult().getType();
  if (failed(verifyDim(*this, rhs.getLength(), lhs.getLength(),
                       "right-hand length", "left-hand length")) ||
      failed(verifySameBatch(*this, {lhs, rhs, result},
                             {"left-hand side", "right-hand side", "result"})) ||
      failed(verifySameElementType(
          *this, {lhs, rhs, result},
          {"left-hand side", "right-hand side", "result"})))
    return failure();
  return success();
}

LogicalResult VecMulMatOp::verify() {
  VecType vec = getVec().getType();
  MatType mat = getMat().getType();
  VecType result = getResult().getType();
  if (failed(verifyDim(*this, mat.getRows(), vec.getLength(),
                       "matrix row count", "vector length")) ||
      failed(verifyDim(*this, result.getLength(), mat.getCols(),
                       "result length", "matrix column count")) ||
      failed(verifySameBatch(*this, {vec, mat, result},
                             {"vector", "matrix", "result"})) ||
      failed(verifySameElementType(*this, {vec, mat, result},
                                   {"vector", "matrix", "result"})))
    return failure();
  return success();
}

LogicalResult MatMulVecOp::verify() {
  MatType mat = getMat().getType();
  VecType vec = getVec().getType();
  VecType result = getResult().getType();
  if (failed(verifyDim(*this, mat.getCols(), vec.getLength(),
                       "matrix column count", "vector length")) ||
      failed(verifyDim(*this, result.getLength(), mat.getRows(),
                       "result length", "matrix row count")) ||
      failed(verifySameBatch(*this, {mat, vec, result},
                             {"matrix", "vector", "result"})) ||
      failed(verifySameElementType(*this, {mat, vec, result},
                                   {"matrix", "vector", "result"})))
    return failure();
  return success();
}

LogicalResult VecOuterVecOp::verify() {
  VecType lhs = getLhs().getType(), rhs = getRhs().getType();
  MatType result = getResult().getType();
  if (failed(verifyDim(*this, result.getRows(), lhs.getLength(),
                       "result row count", "left-hand length")) ||
      failed(verifyDim(*this, result.getCols(), rhs.getLength(),
                       "result column count", "right-hand length")) ||
      failed(verifySameBatch(*this, {lhs, rhs, result},
                             {"left-hand side", "right-hand side", "result"})) ||
      failed(verifySameElementType(
          *this, {lhs, rhs, result},
          {"left-hand side", "right-hand side", "result"})))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Norms, reductions, slices
//===----------------------------------------------------------------------===//

LogicalResult NormOp::verify() {
  if (getP() != 1 && getP() != 2)
    return emitOpError() << "supports the 1-norm and the 2-norm, got p = "
                         << getP();
  if (failed(verifySameBatch(*this,
                             {getInput().getType(), getResult().getType()},
                             {"input", "result"})) ||
      failed(verifySameElementType(
          *this, {getInput().getType(), getResult().getType()},
          {"input", "result"})))
    return failure();
  return success();
}

LogicalResult ReduceOp::verify() {
  if (failed(verifySameBatch(*this,
                             {getInput().getType(), getResult().getType()},
                             {"input", "result"})) ||
      failed(verifySameElementType(
          *this, {getInput().getType(), getResult().getType()},
          {"input", "result"})))
    return failure();
  return success();
}

LogicalResult SliceOp::verify() {
  VecType input = getInput().getType(), result = getResult().getType();
  if (ShapedType::isDynamic(input.getLength()))
    return emitOpError() << "needs a static input length, got " << input;
  if (ShapedType::isDynamic(result.getLength()))
    return emitOpError() << "needs a static result length, got " << result;
  // Written so that no sum can overflow (offsets are any int64).
  int64_t offset = getOffset(), length = result.getLength();
  if (offset < 0 || offset > input.getLength() ||
      length > input.getLength() - offset) {
    InFlightDiagnostic diag = emitOpError() << "slice [" << offset << ", ";
    if (offset <= std::numeric_limits<int64_t>::max() - length)
      diag << offset + length;
    else
      diag << offset << " + " << length;
    return diag << ") is out of bounds for input length "
                << input.getLength();
  }
  if (failed(verifySameBatch(*this, {input, result}, {"input", "result"})) ||
      failed(verifySameElementType(*this, {input, result},
                                   {"input", "result"})))
    return failure();
  return success();
}

LogicalResult PadOp::verify() {
  VecType input = getInput().getType(), result = getResult().getType();
  if (ShapedType::isDynamic(input.getLength()))
    return emitOpError() << "needs a static input length, got " << input;
  if (ShapedType::isDynamic(result.getLength()))
    return emitOpError() << "needs a static result length, got " << result;
  int64_t offset = getOffset(), length = input.getLength();
  if (offset < 0 || offset > result.getLength() ||
      length > result.getLength() - offset)
    return emitOpError() << "places " << length << " elements at offset "
                         << offset << ", outside result length "
                         << result.getLength();
  if (failed(verifySameBatch(*this, {input, result}, {"input", "result"})) ||
      failed(verifySameElementType(*this, {input, result},
                                   {"input", "result"})))
    return failure();
  return success();
}

#define GET_OP_CLASSES
#include "Dialect/BatchedVector/IR/BatchedVectorOps.cpp.inc"
