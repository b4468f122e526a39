//===- TileIteratorAsm.cpp - custom assembly of tile.task -----------------===//
//
// The assembly of tile.task: what its declarative format would generate,
// except that the regions are owned by the OperationState while they are
// parsed (see TaskOp::parse). The syntax is documented in
// TileIteratorOps.td.
//
//===----------------------------------------------------------------------===//

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tile;

::mlir::ParseResult TaskOp::parse(::mlir::OpAsmParser &parser, ::mlir::OperationState &result) {
  ::llvm::SmallVector<::mlir::OpAsmParser::UnresolvedOperand, 4> inputsOperands;
  ::llvm::SMLoc inputsOperandsLoc;
  (void)inputsOperandsLoc;
  ::llvm::SmallVector<::mlir::Type, 1> inputsTypes;
  ::llvm::SmallVector<::mlir::OpAsmParser::UnresolvedOperand, 4> keysOperands;
  ::llvm::SMLoc keysOperandsLoc;
  (void)keysOperandsLoc;
  ::llvm::SmallVector<::mlir::Type, 1> keysTypes;
  ::llvm::SmallVector<::mlir::OpAsmParser::UnresolvedOperand, 4> outputsOperands;
  ::llvm::SMLoc outputsOperandsLoc;
  (void)outputsOperandsLoc;
  ::llvm::SmallVector<::mlir::Type, 1> outputsTypes;
  ::llvm::SmallVector<::mlir::OpAsmParser::UnresolvedOperand, 4> gathersOperands;
  ::llvm::SMLoc gathersOperandsLoc;
  ::llvm::SmallVector<::mlir::Type, 1> gathersTypes;
  ::mlir::ArrayAttr indexing_mapsAttr;
  ::mlir::tile::CombinerAttr accumulateAttr;
  ::mlir::tile::OutputKindAttr outputAttr;
  // The regions belong to the OperationState from the start: a region
  // that fails to parse must not be destroyed before the parser's cleanup
  // of the values its operations defined (the declarative format's
  // locals are, and a forward reference resolved to them then dangles).
  ::mlir::Region *whenRegion = result.addRegion();
  ::mlir::Region *innerRegion = result.addRegion();
  ::mlir::Region *combineRegion = result.addRegion();
  ::mlir::Region *projectRegion = result.addRegion();
  ::mlir::Region *predicateRegion = result.addRegion();
  ::mlir::Region *scheduleRegion = result.addRegion();
  ::mlir::Region *finalizeRegion = result.addRegion();
  if (parser.parseKeyword("ins"))
    return ::mlir::failure();
  if (parser.parseLParen())
    return ::mlir::failure();
  inputsOperandsLoc = parser.getCurrentLocation();
  if (parser.parseOperandList(inputsOperands))
    return ::mlir::failure();
  if (parser.parseColon())
    return ::mlir::failure();
  if (parser.parseTypeList(inputsTypes))
    return ::mlir::failure();
  if (parser.parseRParen())
    return ::mlir::failure();
  if (::mlir::succeeded(parser.parseOptionalKeyword("keys"))) {
  if (parser.parseLParen())
    return ::mlir::failure();
  keysOperandsLoc = parser.getCurrentLocation();
  if (parser.parseOperandList(keysOperands))
    return ::mlir::failure();
  if (parser.parseColon())
    return ::mlir::failure();
  if (parser.parseTypeList(keysTypes))
    return ::mlir::failure();
  if (parser.parseRParen())
    return ::mlir::failure();
  }
  if (parser.parseKeyword("outs"))
    return ::mlir::failure();
  if (parser.parseLParen())
    return ::mlir::failure();
  outputsOperandsLoc = parser.getCurrentLocation();
  if (parser.parseOperandList(outputsOperands))
    return ::mlir::failure();
  if (parser.parseColon())
    return ::mlir::failure();
  if (parser.parseTypeList(outputsTypes))
    return ::mlir::failure();
  if (parser.parseRParen())
    return ::mlir::failure();
  if (::mlir::succeeded(parser.parseOptionalKeyword("gathers"))) {
    if (parser.parseLParen())
      return ::mlir::failure();
    gathersOperandsLoc = parser.getCurrentLocation();
    if (parser.parseOperandList(gathersOperands) || parser.parseColon() ||
        parser.parseTypeList(gathersTypes) || parser.parseRParen())
      return ::mlir::failure();
  }
  if (parser.parseKeyword("maps"))
    return ::mlir::failure();
  if (parser.parseCustomAttributeWithFallback(indexing_mapsAttr, parser.getBuilder().getType<::mlir::NoneType>())) {
    return ::mlir::failure();
  }
  if (indexing_mapsAttr) result.getOrAddProperties<TaskOp::Properties>().indexing_maps = indexing_mapsAttr;
  if (parser.parseKeyword("accumulate"))
    return ::mlir::failure();
  {
    ::llvm::StringRef attrStr;
    ::mlir::NamedAttrList attrStorage;
    auto loc = parser.getCurrentLocation();
    if (parser.parseOptionalKeyword(&attrStr, {"add","mul","max","min","custom"})) {
      ::mlir::StringAttr attrVal;
      ::mlir::OptionalParseResult parseResult =
        parser.parseOptionalAttribute(attrVal,
                                      parser.getBuilder().getNoneType(),
                                      "accumulate", attrStorage);
      if (parseResult.has_value()) {
        if (failed(*parseResult))
          return ::mlir::failure();
        attrStr = attrVal.getValue();
      } else {
        return parser.emitError(loc, "expected string or keyword containing one of the following enum values for attribute 'accumulate' [add, mul, max, min, custom]");
      }
    }
    if (!attrStr.empty()) {
      auto attrOptional = ::mlir::tile::symbolizeCombiner(attrStr);
      if (!attrOptional)
        return parser.emitError(loc, "invalid ")
               << "accumulate attribute specification: \"" << attrStr << '"';;
      accumulateAttr = ::mlir::tile::CombinerAttr::get(parser.getBuilder().getContext(), *attrOptional);
        result.getOrAddProperties<TaskOp::Properties>().accumulate = accumulateAttr;
    }
  }
  if (parser.parseKeyword("output"))
    return ::mlir::failure();
  {
    ::llvm::StringRef attrStr;
    ::mlir::NamedAttrList attrStorage;
    auto loc = parser.getCurrentLocation();
    if (parser.parseOptionalKeyword(&attrStr, {"dense","aggregate","select","top_k","distinct","reduce","per_key"})) {
      ::mlir::StringAttr attrVal;
      ::mlir::OptionalParseResult parseResult =
        parser.parseOptionalAttribute(attrVal,
                                      parser.getBuilder().getNoneType(),
                                      "output", attrStorage);
      if (parseResult.has_value()) {
        if (failed(*parseResult))
          return ::mlir::failure();
        attrStr = attrVal.getValue();
      } else {
        return parser.emitError(loc, "expected string or keyword containing one of the following enum values for attribute 'output' [dense, aggregate, select, top_k, distinct, reduce, per_key]");
      }
    }
    if (!attrStr.empty()) {
      auto attrOptional = ::mlir::tile::symbolizeOutputKind(attrStr);
      if (!attrOptional)
        return parser.emitError(loc, "invalid ")
               << "output attribute specification: \"" << attrStr << '"';;
      outputAttr = ::mlir::tile::OutputKindAttr::get(parser.getBuilder().getContext(), *attrOptional);
        result.getOrAddProperties<TaskOp::Properties>().output = outputAttr;
    }
  }
  {
    auto loc = parser.getCurrentLocation();(void)loc;
    if (parser.parseOptionalAttrDict(result.attributes))
      return ::mlir::failure();
    if (failed(verifyInherentAttrs(result.name, result.attributes, [&]() {
        return parser.emitError(loc) << "'" << result.name.getStringRef() << "' op ";
      })))
      return ::mlir::failure();
  }
  if (::mlir::succeeded(parser.parseOptionalKeyword("when"))) {
  if (parser.parseRegion(*whenRegion))
    return ::mlir::failure();
  }
  if (parser.parseKeyword("inner"))
    return ::mlir::failure();
  if (parser.parseRegion(*innerRegion))
    return ::mlir::failure();
  if (::mlir::succeeded(parser.parseOptionalKeyword("combine"))) {
  if (parser.parseRegion(*combineRegion))
    return ::mlir::failure();
  }
  if (::mlir::succeeded(parser.parseOptionalKeyword("project"))) {
  if (parser.parseRegion(*projectRegion))
    return ::mlir::failure();
  }
  if (::mlir::succeeded(parser.parseOptionalKeyword("finalize"))) {
    if (parser.parseRegion(*finalizeRegion))
      return ::mlir::failure();
  }
  if (::mlir::succeeded(parser.parseOptionalKeyword("predicate"))) {
  if (parser.parseRegion(*predicateRegion))
    return ::mlir::failure();
  }
  // The schedule's terminator is implicit.
  if (::mlir::succeeded(parser.parseOptionalKeyword("schedule"))) {
    if (parser.parseRegion(*scheduleRegion))
      return ::mlir::failure();
    if (scheduleRegion->empty())
      scheduleRegion->emplaceBlock();
    ::mlir::Block &block = scheduleRegion->front();
    if (block.empty() || !block.back().hasTrait<::mlir::OpTrait::IsTerminator>()) {
      ::mlir::OpBuilder builder(parser.getContext());
      builder.setInsertionPointToEnd(&block);
      YieldOp::create(builder, result.location, ::mlir::Value());
    }
  }
::llvm::copy(::llvm::ArrayRef<int32_t>({static_cast<int32_t>(inputsOperands.size()), static_cast<int32_t>(keysOperands.size()), static_cast<int32_t>(outputsOperands.size()), static_cast<int32_t>(gathersOperands.size())}), result.getOrAddProperties<TaskOp::Properties>().operandSegmentSizes.begin());
  if (parser.resolveOperands(inputsOperands, inputsTypes, inputsOperandsLoc, result.operands))
    return ::mlir::failure();
  if (parser.resolveOperands(keysOperands, keysTypes, keysOperandsLoc, result.operands))
    return ::mlir::failure();
  if (parser.resolveOperands(outputsOperands, outputsTypes, outputsOperandsLoc, result.operands))
    return ::mlir::failure();
  if (parser.resolveOperands(gathersOperands, gathersTypes, gathersOperandsLoc, result.operands))
    return ::mlir::failure();
  return ::mlir::success();
}

void TaskOp::print(::mlir::OpAsmPrinter &_odsPrinter) {
  _odsPrinter << ' ' << "ins";
  _odsPrinter << "(";
  _odsPrinter << getInputs();
  _odsPrinter << ' ' << ":";
  _odsPrinter << ' ';
  _odsPrinter << getInputs().getTypes();
  _odsPrinter << ")";
  if (!getKeys().empty()) {
    _odsPrinter << ' ' << "keys";
    _odsPrinter << "(";
    _odsPrinter << getKeys();
    _odsPrinter << ' ' << ":";
    _odsPrinter << ' ';
    _odsPrinter << getKeys().getTypes();
    _odsPrinter << ")";
  }
  _odsPrinter << ' ' << "outs";
  _odsPrinter << "(";
  _odsPrinter << getOutputs();
  _odsPrinter << ' ' << ":";
  _odsPrinter << ' ';
  _odsPrinter << getOutputs().getTypes();
  _odsPrinter << ")";
  if (!getGathers().empty())
    _odsPrinter << " gathers(" << getGathers() << " : "
                << getGathers().getTypes() << ")";
  _odsPrinter << ' ' << "maps";
  _odsPrinter << ' ';
  _odsPrinter.printAttributeWithoutType(getIndexingMapsAttr());
  _odsPrinter << ' ' << "accumulate";
  _odsPrinter << ' ';
  {
    auto caseValue = getAccumulate();
    auto caseValueStr = stringifyCombiner(caseValue);
    _odsPrinter << caseValueStr;
  }
  _odsPrinter << ' ' << "output";
  _odsPrinter << ' ';
  {
    auto caseValue = getOutput();
    auto caseValueStr = stringifyOutputKind(caseValue);
    _odsPrinter << caseValueStr;
  }
  ::llvm::SmallVector<::llvm::StringRef, 2> elidedAttrs;
  elidedAttrs.push_back("operandSegmentSizes");
  elidedAttrs.push_back("indexing_maps");
  elidedAttrs.push_back("accumulate");
  elidedAttrs.push_back("output");
  {
     ::mlir::Builder odsBuilder(getContext());
     ::mlir::Attribute attr = getAssociativeAttr();
     if(attr && (attr == ((false) ? odsBuilder.getUnitAttr() : nullptr)))
       elidedAttrs.push_back("associative");
  }
  {
     ::mlir::Builder odsBuilder(getContext());
     ::mlir::Attribute attr = getSmallestAttr();
     if(attr && (attr == ((false) ? odsBuilder.getUnitAttr() : nullptr)))
       elidedAttrs.push_back("smallest");
  }
  _odsPrinter.printOptionalAttrDict((*this)->getAttrs(), elidedAttrs);
  if (!getWhen().empty()) {
    _odsPrinter << ' ' << "when";
    _odsPrinter << ' ';
    _odsPrinter.printRegion(getWhen());
  }
  _odsPrinter << ' ' << "inner";
  _odsPrinter << ' ';
  _odsPrinter.printRegion(getInner());
  if (!getCombine().empty()) {
    _odsPrinter << ' ' << "combine";
    _odsPrinter << ' ';
    _odsPrinter.printRegion(getCombine());
  }
  if (!getProject().empty()) {
    _odsPrinter << ' ' << "project";
    _odsPrinter << ' ';
    _odsPrinter.printRegion(getProject());
  }
  if (!getFinalize().empty()) {
    _odsPrinter << " finalize ";
    _odsPrinter.printRegion(getFinalize());
  }
  if (!getPredicate().empty()) {
    _odsPrinter << ' ' << "predicate";
    _odsPrinter << ' ';
    _odsPrinter.printRegion(getPredicate());
  }
  if (!getSchedule().empty()) {
    _odsPrinter << ' ' << "schedule";
    _odsPrinter << ' ';
    _odsPrinter.printRegion(getSchedule(), /*printEntryBlockArgs=*/false,
                            /*printBlockTerminators=*/false);
  }
}
