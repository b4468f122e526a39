//===- Signature.h - score-function signatures and argument binding -------===//
//
// The public interface of a compiled KGE function: its parameters (tables,
// index arrays, results), their element types and symbolic shapes. The
// compiler derives it from a `bvec.func`; the runtime reads it from a
// bundle manifest. Binding checks concrete arrays against it and computes
// the sizes of the symbols (`B`, table row counts, dynamic lengths).
//
// Plain C++17 with no dependencies: the runtime and the compiler share it.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_SIGNATURE_H
#define KGE_RUNTIME_SIGNATURE_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kge_runtime {

/// Element types of parameters.
enum class DType { F16, BF16, F32, F64, I32, I64 };

/// "f32", "i64", ...
const char *dtypeName(DType dtype);
/// Parses a dtype name; std::nullopt if unknown.
std::optional<DType> parseDType(const std::string &name);
/// Size of one element in bytes.
unsigned dtypeSize(DType dtype);

/// One dimension of a parameter: a static size or a named symbol.
struct Dim {
  int64_t size = -1;  ///< Static size, or -1 when symbolic.
  std::string symbol; ///< Symbol name when dynamic ("B", "N_Eemb", ...).

  static Dim fixed(int64_t size) { return Dim{size, ""}; }
  static Dim named(std::string symbol) { return Dim{-1, std::move(symbol)}; }
  bool isStatic() const { return size >= 0; }
  std::string str() const;
};

/// Table: an array the function reads. Indices: an index array. Result: an
/// array the caller receives (allocated for it). Output: an array the caller
/// passes and the function writes (destination-passing style, as `tile`
/// tasks take their outputs); it counts among the arguments.
enum class ParamRole { Table, Indices, Result, Output };
const char *roleName(ParamRole role);

struct Parameter {
  std::string name;
  ParamRole role = ParamRole::Table;
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  /// For index arrays: positions (in `Signature::params`) of the tables the
  /// indices select rows of.
  std::vector<unsigned> indexedTables;
  /// For index arrays: the dimension of those tables the indices select (0:
  /// rows, 1: columns).
  unsigned indexedDim = 0;

  /// How messages name it: its role and name ("table 'Eemb'").
  std::string describe() const;
};

/// The parameters of a function: arguments first (in declaration order),
/// then results.
struct Signature {
  std::string name;
  std::vector<Parameter> params;

  unsigned numArguments() const;
  unsigned numResults() const { return params.size() - numArguments(); }
  /// Index of the parameter called `name`, or -1.
  int find(const std::string &name) const;
};

/// The description of a concrete array passed for a parameter.
struct ArrayDesc {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

/// Sizes of the symbols of a signature for one call.
struct Bindings {
  std::map<std::string, int64_t> symbols;

  /// The concrete shape of `param` (all its symbols must be bound).
  std::vector<int64_t> shapeOf(const Parameter &param) const;
  /// The bound value of `symbol`, or -1.
  int64_t lookup(const std::string &symbol) const;
};

/// Checks the arguments (one per argument parameter, in order) against the
/// signature and binds every symbol. `batchSize` binds `B` when no index
/// array determines it. On failure returns false and sets `error` to a
/// message naming the parameter and the problem.
bool bindArguments(const Signature &signature,
                   const std::vector<ArrayDesc> &arguments,
                   std::optional<int64_t> batchSize, Bindings &bindings,
                   std::string &error);

/// Checks the result arrays against the shapes `bindings` gives them.
bool checkResults(const Signature &signature, const Bindings &bindings,
                  const std::vector<ArrayDesc> &results, std::string &error);

/// Checks that every index of the index-array parameter `paramIndex`
/// (held in host memory at `data`) selects a row (a column, when its
/// `indexedDim` is 1) of every table it indexes.
/// Reports the first offending position.
bool checkIndexRange(const Signature &signature, const Bindings &bindings,
                     unsigned paramIndex, const void *data,
                     std::string &error);

} // namespace kge_runtime

#endif // KGE_RUNTIME_SIGNATURE_H
