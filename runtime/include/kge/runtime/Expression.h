//===- Expression.h - size expressions of bundle manifests ------*- C++ -*-===//
//
// Sizes in a manifest (grids, shared memory, scratch buffers, view shapes)
// are integer expressions over the signature's symbols:
//
//   expr    := term (('+' | '-') term)*
//   term    := factor (('*' | '/') factor)*
//   factor  := integer | symbol | '(' expr ')'
//            | ('ceildiv' | 'min' | 'max') '(' expr ',' expr ')'
//
// `/` and `ceildiv` round towards zero and up; dividing by zero, overflow
// and unknown symbols are errors, never undefined behaviour.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_RUNTIME_EXPRESSION_H
#define KGE_RUNTIME_EXPRESSION_H

#include "kge/runtime/Signature.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace kge_runtime {

class Expression {
public:
  /// Parses `text`; on failure returns null and sets `error`.
  static std::shared_ptr<Expression> parse(const std::string &text,
                                           std::string &error);

  /// Evaluates with `bindings`; on failure (unbound symbol, division by
  /// zero, overflow) returns false and sets `error`.
  bool evaluate(const Bindings &bindings, int64_t &value,
                std::string &error) const;

  /// Adds every symbol the expression uses to `symbols`.
  void collectSymbols(std::set<std::string> &symbols) const;

  const std::string &text() const { return source; }

  enum class Kind { Constant, Symbol, Add, Sub, Mul, Div, CeilDiv, Min, Max };

private:
  Kind kind = Kind::Constant;
  int64_t constant = 0;
  std::string symbol;
  std::vector<std::shared_ptr<Expression>> operands;
  std::string source;

  friend class ExpressionParser;
};

} // namespace kge_runtime

#endif // KGE_RUNTIME_EXPRESSION_H
