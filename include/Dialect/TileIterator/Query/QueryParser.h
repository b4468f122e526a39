//===- QueryParser.h - GAMUT's declarative query syntax ---------*- C++ -*-===//
//
// Parses a query in GAMUT's declarative syntax into a tile function (a
// `func.func` holding one `tile.task`):
//
//   associative combine(a, b) = a + b - a * b;     // optional, custom accum
//   where (i in [0, M], j in [0, N]) when (Pzip[i] == Rzip[j]) {
//     accum = 0;
//     reduce (k in [0, K]) {
//       accum += P[i, k] * R[k, j];
//     }
//     C[i, j] = accum;                              // the output operator
//   }
//
// The grammar and the meaning of each output statement are in
// docs/RationaleTileIterator.md. Errors are reported as diagnostics at the
// query's line and column.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_DIALECT_TILEITERATOR_QUERY_QUERYPARSER_H
#define KGE_DIALECT_TILEITERATOR_QUERY_QUERYPARSER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir {
namespace tile {

struct QueryOptions {
  /// Name of the generated function.
  std::string name = "query";
  /// Element types of arrays by name ("f32", "f16", "bf16", "f64", "i32",
  /// "i64"). Arrays not named here are i32 when they are keys (subscripts
  /// of the output) or read only by the join condition, and f32 otherwise;
  /// outputs take the type of their values (f64 when an input is f64).
  llvm::StringMap<std::string> dtypes;
  /// Buffer name of the query (how diagnostics name it).
  std::string bufferName = "<query>";
};

/// Parses `text` into a module holding one tile function. Emits diagnostics
/// in `context` and returns null on error.
OwningOpRef<ModuleOp> parseQuery(llvm::StringRef text, MLIRContext *context,
                                 const QueryOptions &options = {});

} // namespace tile
} // namespace mlir

#endif // KGE_DIALECT_TILEITERATOR_QUERY_QUERYPARSER_H
