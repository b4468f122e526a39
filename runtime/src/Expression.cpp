//===- Expression.cpp - size expressions of bundle manifests --------------===//

#include "kge/runtime/Expression.h"

#include <cctype>

namespace kge_runtime {

class ExpressionParser {
public:
  explicit ExpressionParser(const std::string &text) : text(text) {}

  std::shared_ptr<Expression> parseAll(std::string &error) {
    auto result = parseExpr();
    skipSpaces();
    if (result && pos != text.size())
      fail("unexpected '" + text.substr(pos, 1) + "'");
    if (!failure.empty()) {
      error = "bad size expression '" + text + "': " + failure;
      return nullptr;
    }
    return result;
  }

private:
  using Ptr = std::shared_ptr<Expression>;

  void skipSpaces() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  bool consume(char c) {
    skipSpaces();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  Ptr fail(const std::string &message) {
    if (failure.empty())
      failure = message + " at offset " + std::to_string(pos);
    return nullptr;
  }
  static Ptr node(Expression::Kind kind, std::vector<Ptr> operands) {
    auto e = std::make_shared<Expression>();
    e->kind = kind;
    e->operands = std::move(operands);
    return e;
  }

  Ptr parseExpr() {
    if (++depth > 64)
      return fail("expression nested too deeply");
    Ptr lhs = parseTerm();
    while (lhs) {
      if (consume('+'))
        lhs = combine(Expression::Kind::Add, lhs, parseTerm());
      else if (consume('-'))
        lhs = combine(Expression::Kind::Sub, lhs, parseTerm());
      else
        break;
    }
    --depth;
    return lhs;
  }
  Ptr parseTerm() {
    Ptr lhs = parseFactor();
    while (lhs) {
      if (consume('*'))
        lhs = combine(Expression::Kind::Mul, lhs, parseFactor());
      else if (consume('/'))
        lhs = combine(Expression::Kind::Div, lhs, parseFactor());
      else
        break;
    }
    return lhs;
  }
  Ptr combine(Expression::Kind kind, Ptr lhs, Ptr rhs) {
    if (!rhs)
      return nullptr;
    return node(kind, {lhs, rhs});
  }
  Ptr parseFactor() {
    skipSpaces();
    if (pos >= text.size())
      return fail("expected a number, a symbol or '('");
    char c = text[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      while (pos < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(value, 10, &value) ||
            __builtin_add_overflow(value, text[pos] - '0', &value))
          return fail("number too large");
        ++pos;
      }
      auto e = std::make_shared<Expression>();
      e->constant = value;
      return e;
    }
    if (consume('(')) {
      Ptr inner = parseExpr();
      if (inner && !consume(')'))
        return fail("expected ')'");
      return inner;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[pos])) ||
              text[pos] == '_'))
        ++pos;
      std::string name = text.substr(start, pos - start);
      Expression::Kind kind;
      bool function = true;
      if (name == "ceildiv")
        kind = Expression::Kind::CeilDiv;
      else if (name == "min")
        kind = Expression::Kind::Min;
      else if (name == "max")
        kind = Expression::Kind::Max;
      else
        function = false;
      if (!function) {
        auto e = std::make_shared<Expression>();
        e->kind = Expression::Kind::Symbol;
        e->symbol = name;
        return e;
      }
      if (!consume('('))
        return fail("expected '(' after " + name);
      Ptr a = parseExpr();
      if (!a)
        return nullptr;
      if (!consume(','))
        return fail("expected ',' in " + name);
      Ptr b = parseExpr();
      if (!b)
        return nullptr;
      if (!consume(')'))
        return fail("expected ')' after the arguments of " + name);
      return node(kind, {a, b});
    }
    return fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string &text;
  size_t pos = 0;
  int depth = 0;
  std::string failure;
};

std::shared_ptr<Expression> Expression::parse(const std::string &text,
                                              std::string &error) {
  ExpressionParser parser(text);
  auto result = parser.parseAll(error);
  if (result)
    result->source = text;
  return result;
}

bool Expression::evaluate(const Bindings &bindings, int64_t &value,
                          std::string &error) const {
  switch (kind) {
  case Kind::Constant:
    value = constant;
    return true;
  case Kind::Symbol:
    value = bindings.lookup(symbol);
    if (value < 0) {
      error = "size '" + symbol + "' is not known";
      return false;
    }
    return true;
  default:
    break;
  }
  int64_t a, b;
  if (!operands[0]->evaluate(bindings, a, error) ||
      !operands[1]->evaluate(bindings, b, error))
    return false;
  bool overflow = false;
  switch (kind) {
  case Kind::Add:
    overflow = __builtin_add_overflow(a, b, &value);
    break;
  case Kind::Sub:
    overflow = __builtin_sub_overflow(a, b, &value);
    break;
  case Kind::Mul:
    overflow = __builtin_mul_overflow(a, b, &value);
    break;
  case Kind::Div:
  case Kind::CeilDiv:
    if (b == 0) {
      error = "division by zero in a size expression";
      return false;
    }
    value = a / b;
    if (kind == Kind::CeilDiv && a % b != 0 && ((a < 0) == (b < 0)))
      value += 1;
    break;
  case Kind::Min:
    value = a < b ? a : b;
    break;
  case Kind::Max:
    value = a > b ? a : b;
    break;
  default:
    break;
  }
  if (overflow) {
    error = "a size expression overflows";
    return false;
  }
  return true;
}

void Expression::collectSymbols(std::set<std::string> &symbols) const {
  if (kind == Kind::Symbol)
    symbols.insert(symbol);
  for (const auto &operand : operands)
    operand->collectSymbols(symbols);
}

} // namespace kge_runtime
