//===- GraphDialect.h - graph dialect ---------------------------*- C++ -*-===//
//
// The `graph` dialect: relational graph neural networks (Pigeon's
// inter-operator level). Include this header to use the dialect and its
// operations.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_H
#define KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/Graph/IR/GraphOpsDialect.h.inc"
#include "Dialect/Graph/IR/GraphEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Graph/IR/GraphOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "Dialect/Graph/IR/GraphOps.h.inc"

#endif // KGE_DIALECT_GRAPH_IR_GRAPHDIALECT_H
