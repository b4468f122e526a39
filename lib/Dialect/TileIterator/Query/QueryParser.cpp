//===- QueryParser.cpp - GAMUT's declarative query syntax -----------------===//
//
// A hand-written lexer and recursive-descent parser for GAMUT queries, an
// analysis that classifies every array by how the query indexes it, and
// the construction of the tile function.
//
//===----------------------------------------------------------------------===//

#include "Dialect/TileIterator/Query/QueryParser.h"

#include "Dialect/TileIterator/IR/TileIteratorDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSwitch.h"

#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

using namespace mlir;
using namespace mlir::tile;

namespace {

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

enum class Tok { End, Ident, Number, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  unsigned line = 1, col = 1;
};

/// Reports errors at query positions.
class Reporter {
public:
  Reporter(MLIRContext *context, StringRef buffer)
      : context(context), buffer(buffer.str()) {}

  Location loc(const Token &at) const {
    return FileLineColLoc::get(context, buffer, at.line, at.col);
  }
  /// Emits `message` at `at`; returns failure for chaining.
  LogicalResult error(const Token &at, const Twine &message) {
    if (!failed_)
      emitError(loc(at)) << message;
    failed_ = true;
    return failure();
  }
  bool failed() const { return failed_; }

private:
  MLIRContext *context;
  std::string buffer;
  bool failed_ = false;
};

LogicalResult lex(StringRef text, Reporter &report,
                  std::vector<Token> &tokens) {
  unsigned line = 1, col = 1;
  size_t pos = 0;
  auto advance = [&](size_t n) {
    for (size_t i = 0; i < n && pos < text.size(); ++i, ++pos) {
      if (text[pos] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  static const char *kPuncts[] = {"+=", "*=", "==", "!=", "<=", ">=", "&&",
                                  "||", "(",  ")",  "[",  "]",  "{",  "}",
                                  ",",  ";",  "=",  "+",  "-",  "*",  "/",
                                  "<",  ">",  "!",  "?",  ":",  "."};
  while (pos < text.size()) {
    char c = text[pos];
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    if (text.substr(pos).starts_with("//")) {
      while (pos < text.size() && text[pos] != '\n')
        advance(1);
      continue;
    }
    if (text.substr(pos).starts_with("/*")) {
      Token at{Tok::Punct, "/*", line, col};
      size_t end = text.find("*/", pos + 2);
      if (end == StringRef::npos)
        return report.error(at, "unterminated comment");
      advance(end + 2 - pos);
      continue;
    }
    Token token{Tok::End, "", line, col};
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = pos;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) ||
              text[end] == '_'))
        ++end;
      token.kind = Tok::Ident;
      token.text = text.substr(pos, end - pos).str();
      advance(end - pos);
      tokens.push_back(token);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && pos + 1 < text.size() &&
         std::isdigit(static_cast<unsigned char>(text[pos + 1])))) {
      size_t end = pos;
      while (end < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[end])) ||
              text[end] == '.'))
        ++end;
      if (end < text.size() && (text[end] == 'e' || text[end] == 'E')) {
        size_t exp = end + 1;
        if (exp < text.size() && (text[exp] == '+' || text[exp] == '-'))
          ++exp;
        if (exp < text.size() &&
            std::isdigit(static_cast<unsigned char>(text[exp]))) {
          end = exp;
          while (end < text.size() &&
                 std::isdigit(static_cast<unsigned char>(text[end])))
            ++end;
        }
      }
      token.kind = Tok::Number;
      token.text = text.substr(pos, end - pos).str();
      double value;
      if (StringRef(token.text).getAsDouble(value))
        return report.error(token, "malformed number '" + token.text + "'");
      advance(end - pos);
      tokens.push_back(token);
      continue;
    }
    bool matched = false;
    for (const char *punct : kPuncts) {
      if (text.substr(pos).starts_with(punct)) {
        token.kind = Tok::Punct;
        token.text = punct;
        advance(token.text.size());
        tokens.push_back(token);
        matched = true;
        break;
      }
    }
    if (!matched)
      return report.error(token, std::string("unexpected character '") + c +
                                     "'");
  }
  tokens.push_back(Token{Tok::End, "", line, col});
  return success();
}

//===----------------------------------------------------------------------===//
// Syntax tree
//===----------------------------------------------------------------------===//

struct Expr {
  enum Kind { Number, Name, Access, Unary, Binary, Call, Choose } kind;
  Token at;
  double number = 0;
  /// Name, array, function or operator.
  std::string name;
  /// Subscripts of an access, operands of an operator or call.
  std::vector<std::unique_ptr<Expr>> operands;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Range {
  Token at;
  std::string var;
  /// The end of the range: a size symbol, or a number when `symbol` is
  /// empty.
  std::string symbol;
  int64_t size = ShapedType::kDynamic;
};

struct OutputStmt {
  enum Kind { Dense, Aggregate, Select, Top, Distinct, Reduce, PerKey } kind =
      Dense;
  Token at;
  std::string target;
  /// Dense: the two axis names; aggregate: the two key accesses; reduce:
  /// the row axis; per key: the key access along k, then the two axes.
  std::vector<ExprPtr> subscripts;
  ExprPtr value;
  ExprPtr condition;
  /// Aggregate, reduce and per-key outputs: how values combine.
  Combiner aggregate = Combiner::add;
  int64_t k = 0;
  bool smallest = false;
  /// A reduce output's finalization (`S[i] = e;` after its statement): its
  /// subscript and value.
  ExprPtr finalizeSubscript, finalize;
};

struct CombineDecl {
  Token at;
  std::string lhs, rhs;
  ExprPtr body;
};

struct Query {
  std::optional<CombineDecl> combine;
  Range ranges[3];
  ExprPtr when;
  Token accAt;
  std::string acc;
  ExprPtr init;
  Combiner accumulate = Combiner::add;
  ExprPtr inner;
  std::optional<OutputStmt> output;
};

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

class Parser {
public:
  Parser(std::vector<Token> tokens, Reporter &report)
      : tokens(std::move(tokens)), report(report) {}

  LogicalResult parse(Query &query);

private:
  const Token &peek(unsigned ahead = 0) const {
    return tokens[std::min<size_t>(pos + ahead, tokens.size() - 1)];
  }
  bool is(StringRef text, unsigned ahead = 0) const {
    const Token &t = peek(ahead);
    return t.kind != Tok::End && t.kind != Tok::Number && t.text == text;
  }
  bool consumeIf(StringRef text) {
    if (!is(text))
      return false;
    ++pos;
    return true;
  }
  LogicalResult expect(StringRef text, StringRef context) {
    if (consumeIf(text))
      return success();
    return report.error(peek(), "expected '" + text + "' " + context +
                                    ", got " + describe(peek()));
  }
  static std::string describe(const Token &t) {
    if (t.kind == Tok::End)
      return "the end of the query";
    return "'" + t.text + "'";
  }
  FailureOr<std::string> identifier(StringRef what) {
    if (peek().kind != Tok::Ident)
      return report.error(peek(),
                          "expected " + what + ", got " + describe(peek()));
    return tokens[pos++].text;
  }

  LogicalResult parseRange(Range &range);
  LogicalResult parseCombine(Query &query);
  LogicalResult parseReduce(Query &query);
  LogicalResult parseOutput(Query &query);
  LogicalResult parseFinalize(OutputStmt &out);
  LogicalResult parseAccumulation(Query &query);

  ExprPtr expression() { return choose(); }
  ExprPtr choose();
  ExprPtr binary(unsigned level);
  ExprPtr unary();
  ExprPtr primary();
  ExprPtr make(Expr::Kind kind, const Token &at, std::string name = "") {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    e->name = std::move(name);
    return e;
  }

  std::vector<Token> tokens;
  size_t pos = 0;
  Reporter &report;
};

LogicalResult Parser::parseRange(Range &range) {
  range.at = peek();
  FailureOr<std::string> var = identifier("an axis variable");
  if (failed(var) || failed(expect("in", "after the axis variable")) ||
      failed(expect("[", "to open the axis range")))
    return failure();
  range.var = *var;
  const Token &start = peek();
  if (start.kind != Tok::Number || start.text != "0")
    return report.error(start, "the range of axis '" + range.var +
                                   "' must start at 0");
  ++pos;
  if (failed(expect(",", "between the bounds of the range")))
    return failure();
  const Token &end = peek();
  if (end.kind == Tok::Ident) {
    range.symbol = end.text;
  } else if (end.kind == Tok::Number) {
    int64_t size;
    if (StringRef(end.text).getAsInteger(10, size) || size < 0)
      return report.error(end, "the end of the range of axis '" + range.var +
                                   "' must be a size name or a "
                                   "non-negative integer, got '" +
                                   end.text + "'");
    range.size = size;
  } else {
    return report.error(end, "expected the end of the range of axis '" +
                                 range.var + "', got " + describe(end));
  }
  ++pos;
  // GAMUT writes [s, e] for the half-open [s, e); accept either bracket.
  if (!consumeIf("]") && !consumeIf(")"))
    return report.error(peek(), "expected ']' to close the axis range, got " +
                                    describe(peek()));
  return success();
}

LogicalResult Parser::parseCombine(Query &query) {
  CombineDecl decl;
  decl.at = peek();
  ++pos; // associative
  if (failed(expect("combine", "after 'associative'")) ||
      failed(expect("(", "before the combination's parameters")))
    return failure();
  FailureOr<std::string> lhs = identifier("a parameter name");
  if (failed(lhs) || failed(expect(",", "between the parameters")))
    return failure();
  FailureOr<std::string> rhs = identifier("a parameter name");
  if (failed(rhs) || failed(expect(")", "after the parameters")) ||
      failed(expect("=", "before the combination")))
    return failure();
  decl.lhs = *lhs;
  decl.rhs = *rhs;
  decl.body = expression();
  if (!decl.body || failed(expect(";", "after the combination")))
    return failure();
  query.combine = std::move(decl);
  return success();
}

LogicalResult Parser::parseAccumulation(Query &query) {
  const Token &at = peek();
  FailureOr<std::string> target = identifier("the accumulation statement");
  if (failed(target))
    return failure();
  if (*target != query.acc)
    return report.error(at, "the reduction must update the accumulator '" +
                                query.acc + "', not '" + *target + "'");
  auto shapeError = [&] {
    return report.error(
        at, "the reduction must be '" + query.acc + " += e', '" + query.acc +
                " *= e', '" + query.acc + " = max(" + query.acc + ", e)', '" +
                query.acc + " = min(" + query.acc + ", e)' or '" + query.acc +
                " = combine(" + query.acc + ", e)'");
  };
  if (consumeIf("+=") || consumeIf("*=")) {
    query.accumulate =
        tokens[pos - 1].text == "+=" ? Combiner::add : Combiner::mul;
    query.inner = expression();
  } else if (consumeIf("=")) {
    const Token &fn = peek();
    if (fn.kind != Tok::Ident || !is("(", 1) || peek(2).text != query.acc ||
        !is(",", 3))
      return shapeError();
    if (fn.text == "max")
      query.accumulate = Combiner::max;
    else if (fn.text == "min")
      query.accumulate = Combiner::min;
    else if (fn.text == "combine")
      query.accumulate = Combiner::custom;
    else
      return shapeError();
    if (query.accumulate == Combiner::custom && !query.combine)
      return report.error(fn, "'combine' is not declared: declare it before "
                              "'where' as 'associative combine(a, b) = ...;'");
    pos += 4;
    query.inner = expression();
    if (query.inner && failed(expect(")", "to close the accumulation")))
      return failure();
  } else {
    return shapeError();
  }
  if (!query.inner || failed(expect(";", "after the accumulation")))
    return failure();
  return success();
}

LogicalResult Parser::parseOutput(Query &query) {
  // A second statement on a reduce output's array is its finalization.
  if (query.output && query.output->kind == OutputStmt::Reduce &&
      !query.output->finalize && peek().text == query.output->target &&
      is("[", 1))
    return parseFinalize(*query.output);
  if (query.output)
    return report.error(peek(), "a query has one output operator; '" +
                                    query.output->target +
                                    "' is already its output" +
                                    (query.output->finalize
                                         ? " and is finalized"
                                         : ""));
  OutputStmt out;
  out.at = peek();
  if (consumeIf("if")) {
    if (failed(expect("(", "before the condition")))
      return failure();
    out.condition = expression();
    if (!out.condition || failed(expect(")", "after the condition")))
      return failure();
  }
  const Token &targetAt = peek();
  FailureOr<std::string> target = identifier("an output statement");
  if (failed(target))
    return failure();
  out.target = *target;
  if (consumeIf(".")) {
    const Token &method = peek();
    FailureOr<std::string> name = identifier("'put', 'top', 'bottom' or "
                                             "'distinct'");
    if (failed(name) || failed(expect("(", "after '" + *name + "'")))
      return failure();
    if (*name == "put" || *name == "distinct") {
      out.kind = *name == "put" ? OutputStmt::Select : OutputStmt::Distinct;
    } else if (*name == "top" || *name == "bottom") {
      out.kind = OutputStmt::Top;
      out.smallest = *name == "bottom";
      const Token &kAt = peek();
      if (kAt.kind != Tok::Number ||
          StringRef(kAt.text).getAsInteger(10, out.k) || out.k < 1 ||
          out.k > std::numeric_limits<int32_t>::max())
        return report.error(kAt, "the count of '" + *name +
                                     "' must be a positive integer below "
                                     "2^31, got " +
                                     describe(kAt));
      ++pos;
      if (failed(expect(",", "after the count")))
        return failure();
    } else {
      return report.error(method, "unknown output operation '" + *name +
                                      "': use put (select), top or bottom "
                                      "(top-k) or distinct");
    }
    out.value = expression();
    if (!out.value || failed(expect(")", "after the value")) ||
        failed(expect(";", "after the output statement")))
      return failure();
    if (out.kind == OutputStmt::Select && !out.condition)
      return report.error(out.at, "'put' stores the pairs a condition "
                                  "selects: write 'if (condition) " +
                                      out.target + ".put(value);'");
    query.output = std::move(out);
    return success();
  }
  if (out.condition)
    return report.error(targetAt,
                        "a condition guards put, top, bottom or distinct; a "
                        "dense or aggregate output takes every pair");
  if (failed(expect("[", "after the output array")))
    return failure();
  do {
    ExprPtr subscript = expression();
    if (!subscript)
      return failure();
    out.subscripts.push_back(std::move(subscript));
  } while (consumeIf(","));
  if (failed(expect("]", "after the output's subscripts")))
    return failure();
  switch (out.subscripts.size()) {
  case 1:
    out.kind = OutputStmt::Reduce;
    break;
  case 2:
    out.kind = out.subscripts[0]->kind == Expr::Access ? OutputStmt::Aggregate
                                                       : OutputStmt::Dense;
    break;
  case 3:
    out.kind = OutputStmt::PerKey;
    break;
  default:
    return report.error(targetAt,
                        "the output '" + out.target + "' has " +
                            std::to_string(out.subscripts.size()) +
                            " subscripts: write S[i] (a row's values "
                            "reduced), C[i, j] (dense), C[K1[i], K2[j]] "
                            "(aggregate) or C[key[k], i, j] (a matrix per "
                            "key)");
  }
  // Every output but a dense one combines its values into what it holds.
  bool combines = out.kind != OutputStmt::Dense;
  if (consumeIf("+=")) {
    if (!combines)
      return report.error(targetAt, "'+=' aggregates into groups given by key "
                                    "arrays, as in C[Pzip[i], Rzip[j]] += "
                                    "accum; a dense output is assigned with "
                                    "'='");
    out.value = expression();
  } else if (consumeIf("=")) {
    // C[a, b] = max(C[a, b], e) aggregates with max (min alike).
    const Token &fn = peek();
    if (combines) {
      StringRef kind = out.kind == OutputStmt::Aggregate ? "an aggregate"
                       : out.kind == OutputStmt::Reduce  ? "a reduce"
                                                         : "a per-key";
      if (fn.kind != Tok::Ident || (fn.text != "max" && fn.text != "min") ||
          !is("(", 1) || peek(2).text != out.target)
        return report.error(fn, kind + " output is written '" + out.target +
                                    "[...] += e' or '" + out.target +
                                    "[...] = max(" + out.target +
                                    "[...], e)' (or min)");
      out.aggregate = fn.text == "max" ? Combiner::max : Combiner::min;
      pos += 2;
      ExprPtr self = expression();
      if (!self || failed(expect(",", "after the aggregated array")))
        return failure();
      out.value = expression();
      if (out.value && failed(expect(")", "to close the aggregation")))
        return failure();
    } else {
      out.value = expression();
    }
  } else {
    return report.error(peek(), "expected '=' or '+=' after the output, got " +
                                    describe(peek()));
  }
  if (!out.value || failed(expect(";", "after the output statement")))
    return failure();
  query.output = std::move(out);
  return success();
}

LogicalResult Parser::parseFinalize(OutputStmt &out) {
  ++pos; // the output array
  ++pos; // [
  out.finalizeSubscript = expression();
  if (!out.finalizeSubscript ||
      failed(expect("]", "after the finalized row's subscript")))
    return failure();
  if (!consumeIf("="))
    return report.error(peek(), "the finalization of the reduce output '" +
                                    out.target + "' is written '" +
                                    out.target + "[i] = e;' (e reads " +
                                    out.target + "[i] and i), got " +
                                    describe(peek()));
  out.finalize = expression();
  if (!out.finalize || failed(expect(";", "after the finalization")))
    return failure();
  return success();
}

LogicalResult Parser::parseReduce(Query &query) {
  if (failed(expect("(", "after 'reduce'")) ||
      failed(parseRange(query.ranges[2])) ||
      failed(expect(")", "after the reduction range")) ||
      failed(expect("{", "to open the reduction")))
    return failure();
  if (failed(parseAccumulation(query)))
    return failure();
  // GAMUT also writes the output operator inside the reduction.
  while (!is("}")) {
    if (peek().kind == Tok::End)
      return report.error(peek(), "expected '}' to close the reduction");
    if (failed(parseOutput(query)))
      return failure();
  }
  ++pos;
  return success();
}

LogicalResult Parser::parse(Query &query) {
  if (is("associative") && failed(parseCombine(query)))
    return failure();
  if (is("combine"))
    return report.error(peek(), "a custom combination must be declared "
                                "'associative': tiling the reduction "
                                "reorders its combinations");
  if (failed(expect("where", "to start the query")) ||
      failed(expect("(", "after 'where'")) ||
      failed(parseRange(query.ranges[0])) ||
      failed(expect(",", "between the spatial axes")))
    return failure();
  if (failed(parseRange(query.ranges[1])))
    return failure();
  if (is(","))
    return report.error(peek(), "a matmul-like task has exactly two spatial "
                                "axes and one reduction axis");
  if (failed(expect(")", "after the spatial axes")))
    return failure();
  if (consumeIf("when")) {
    if (failed(expect("(", "after 'when'")))
      return failure();
    query.when = expression();
    if (!query.when || failed(expect(")", "after the join condition")))
      return failure();
  }
  if (failed(expect("{", "to open the query body")))
    return failure();
  query.accAt = peek();
  FailureOr<std::string> acc = identifier("the accumulator's initialization");
  if (failed(acc) || failed(expect("=", "after the accumulator")))
    return failure();
  query.acc = *acc;
  query.init = expression();
  if (!query.init || failed(expect(";", "after the initialization")) ||
      failed(expect("reduce", "after the initialization")))
    return failure();
  if (failed(parseReduce(query)))
    return failure();
  if (is("reduce"))
    return report.error(peek(), "a matmul-like task has exactly one "
                                "reduction axis");
  while (!is("}")) {
    if (peek().kind == Tok::End)
      return report.error(peek(), "expected '}' to close the query body");
    if (failed(parseOutput(query)))
      return failure();
  }
  ++pos;
  if (peek().kind != Tok::End)
    return report.error(peek(), "unexpected " + describe(peek()) +
                                    " after the query");
  if (!query.output)
    return report.error(peek(), "the query has no output statement");
  return success();
}

ExprPtr Parser::choose() {
  ExprPtr cond = binary(0);
  if (!cond || !is("?"))
    return cond;
  Token at = tokens[pos++];
  ExprPtr lhs = choose();
  if (!lhs || failed(expect(":", "in the conditional expression")))
    return nullptr;
  ExprPtr rhs = choose();
  if (!rhs)
    return nullptr;
  ExprPtr e = make(Expr::Choose, at, "?");
  e->operands.push_back(std::move(cond));
  e->operands.push_back(std::move(lhs));
  e->operands.push_back(std::move(rhs));
  return e;
}

ExprPtr Parser::binary(unsigned level) {
  static const std::vector<std::vector<StringRef>> kLevels = {
      {"||"}, {"&&"}, {"==", "!="}, {"<", ">", "<=", ">="}, {"+", "-"},
      {"*", "/"}};
  if (level == kLevels.size())
    return unary();
  ExprPtr lhs = binary(level + 1);
  while (lhs) {
    const Token &t = peek();
    if (t.kind != Tok::Punct || !llvm::is_contained(kLevels[level], t.text))
      break;
    Token at = tokens[pos++];
    ExprPtr rhs = binary(level + 1);
    if (!rhs)
      return nullptr;
    ExprPtr e = make(Expr::Binary, at, at.text);
    e->operands.push_back(std::move(lhs));
    e->operands.push_back(std::move(rhs));
    lhs = std::move(e);
  }
  return lhs;
}

ExprPtr Parser::unary() {
  if (is("-") || is("!")) {
    Token at = tokens[pos++];
    ExprPtr operand = unary();
    if (!operand)
      return nullptr;
    ExprPtr e = make(Expr::Unary, at, at.text);
    e->operands.push_back(std::move(operand));
    return e;
  }
  return primary();
}

ExprPtr Parser::primary() {
  const Token &t = peek();
  if (t.kind == Tok::Number) {
    ExprPtr e = make(Expr::Number, t);
    (void)StringRef(t.text).getAsDouble(e->number);
    ++pos;
    return e;
  }
  if (consumeIf("(")) {
    ExprPtr e = expression();
    if (!e || failed(expect(")", "to close the parenthesis")))
      return nullptr;
    return e;
  }
  if (t.kind != Tok::Ident) {
    (void)report.error(t, "expected an expression, got " + describe(t));
    return nullptr;
  }
  Token at = tokens[pos++];
  if (consumeIf("[")) {
    ExprPtr e = make(Expr::Access, at, at.text);
    do {
      ExprPtr subscript = expression();
      if (!subscript)
        return nullptr;
      e->operands.push_back(std::move(subscript));
    } while (consumeIf(","));
    if (failed(expect("]", "after the subscripts")))
      return nullptr;
    return e;
  }
  if (consumeIf("(")) {
    ExprPtr e = make(Expr::Call, at, at.text);
    if (!consumeIf(")")) {
      do {
        ExprPtr arg = expression();
        if (!arg)
          return nullptr;
        e->operands.push_back(std::move(arg));
      } while (consumeIf(","));
      if (failed(expect(")", "after the arguments")))
        return nullptr;
    }
    return e;
  }
  return make(Expr::Name, at, at.text);
}

//===----------------------------------------------------------------------===//
// Analysis: arrays and their operand kinds
//===----------------------------------------------------------------------===//

/// How an input is read: its axes by subscript (0: i, 1: j, 2: k) and, by
/// subscript, the index array it is gathered through (as in `E[h[i], k]`)
/// or empty.
struct Use {
  SmallVector<unsigned> axes;
  SmallVector<std::string> gathers;
  bool operator==(const Use &other) const {
    return axes == other.axes && gathers == other.gathers;
  }
};

struct ArrayInfo {
  Token at;
  /// Axes by subscript of a key or index array (its one axis), and of an
  /// input's first use.
  SmallVector<unsigned> axes;
  SmallVector<std::string> gathers;
  /// An input's uses: one task input each (a table read through two index
  /// arrays, as `E[h[i], k]` and `E[t[i], k]`, is read twice).
  SmallVector<Use> uses;
  bool isKey = false;
  /// An index array that gathers a spatial subscript of an input.
  bool isGather = false;
  bool isInput = false;
  /// Read by a join condition / by arithmetic (inner, output, condition).
  bool inJoin = false, inValue = false;
  Type elementType;
  unsigned argNumber = 0;

  /// Whether the array is read along `axis` (by any use, or as a key or
  /// index array).
  bool indexes(unsigned axis) const {
    return llvm::is_contained(axes, axis) ||
           llvm::any_of(uses, [&](const Use &use) {
             return llvm::is_contained(use.axes, axis);
           });
  }
};

class QueryBuilder {
public:
  QueryBuilder(Query &query, Reporter &report, MLIRContext *context,
          const QueryOptions &options)
      : query(query), report(report), context(context), options(options),
        b(context) {}

  OwningOpRef<ModuleOp> build();

private:
  std::optional<unsigned> axisOf(StringRef name) const {
    for (unsigned a = 0; a < 3; ++a)
      if (query.ranges[a].var == name)
        return a;
    return std::nullopt;
  }
  /// How region environments name an input read: the array and its
  /// subscripts as written (`E[h[i],k]`).
  std::string useKey(StringRef name, const Use &use) const {
    std::string key = name.str() + "[";
    for (auto [d, axis] : llvm::enumerate(use.axes)) {
      if (d)
        key += ",";
      const std::string &var = query.ranges[axis].var;
      key += d < use.gathers.size() && !use.gathers[d].empty()
                 ? use.gathers[d] + "[" + var + "]"
                 : var;
    }
    return key + "]";
  }
  /// The key of an access expression (any subscripts, as text).
  static std::string accessKey(const Expr &e) {
    std::string key = e.name + "[";
    for (auto [d, subscript] : llvm::enumerate(e.operands)) {
      if (d)
        key += ",";
      key += subscript->kind == Expr::Access &&
                     subscript->operands.size() == 1 &&
                     subscript->operands[0]->kind == Expr::Name
                 ? subscript->name + "[" + subscript->operands[0]->name + "]"
                 : subscript->kind == Expr::Name ? subscript->name : "?";
    }
    return key + "]";
  }
  LogicalResult collect(const Expr &e, bool join);
  LogicalResult recordAccess(const Expr &e, bool join);
  LogicalResult recordKey(const Expr &e, unsigned axis);
  LogicalResult recordGather(const Expr &e, unsigned axis);
  FailureOr<Type> typeNamed(const Token &at, StringRef name, Type fallback);
  OwningOpRef<ModuleOp> failAt(const Token &at, const Twine &message) {
    (void)report.error(at, message);
    return nullptr;
  }

  /// Values visible to an expression inside a region.
  struct Env {
    StringRef region;
    DenseMap<StringRef, Value> names;
    /// Inputs by use (useKey), with their region block arguments.
    llvm::StringMap<Value> arrays;
  };
  FailureOr<Value> emit(const Expr &e, Env &env);
  Value toFloat(Value v, Location loc);
  Value toBool(Value v, Location loc);
  FailureOr<Value> initValue();
  /// Whether the initial value is the accumulator's own identity (always
  /// so for a custom one: its initial value is its identity).
  bool startsFromIdentity();
  /// The accumulator with a non-identity initial value combined in.
  Value foldedAccumulator(Value acc, Location loc);
  FailureOr<Value> convertTo(Value v, Type type, Location loc);

  Query &query;
  Reporter &report;
  MLIRContext *context;
  const QueryOptions &options;
  OpBuilder b;
  std::map<std::string, ArrayInfo> arrays;
  SmallVector<std::string> order;
  Type floatType;
  std::optional<double> initConstant;
};

FailureOr<Type> QueryBuilder::typeNamed(const Token &at, StringRef name,
                                   Type fallback) {
  auto it = options.dtypes.find(name);
  if (it == options.dtypes.end())
    return fallback;
  Type type = llvm::StringSwitch<Type>(it->second)
                  .Case("f16", b.getF16Type())
                  .Case("bf16", b.getBF16Type())
                  .Case("f32", b.getF32Type())
                  .Case("f64", b.getF64Type())
                  .Case("i32", b.getI32Type())
                  .Case("i64", b.getI64Type())
                  .Default(Type());
  if (!type) {
    (void)report.error(at, "unknown dtype '" + it->second + "' for '" + name +
                         "': use f16, bf16, f32, f64, i32 or i64");
    return failure();
  }
  return type;
}

LogicalResult QueryBuilder::recordAccess(const Expr &e, bool join) {
  if (e.name == query.acc || axisOf(e.name))
    return report.error(e.at, "'" + e.name + "' is not an array");
  if (query.output && e.name == query.output->target)
    return report.error(e.at, "the output '" + e.name +
                                  "' cannot be read by the query");
  SmallVector<unsigned> axes;
  SmallVector<std::string> gathers;
  for (const ExprPtr &subscript : e.operands) {
    std::optional<unsigned> axis;
    std::string gather;
    if (subscript->kind == Expr::Name)
      axis = axisOf(subscript->name);
    // A gathered subscript: an index array indexed by a spatial axis.
    if (subscript->kind == Expr::Access && subscript->operands.size() == 1 &&
        subscript->operands[0]->kind == Expr::Name) {
      axis = axisOf(subscript->operands[0]->name);
      if (axis == 2u && query.output->kind != OutputStmt::PerKey)
        return report.error(subscript->at,
                            "'" + subscript->name + "' gathers along the "
                            "reduction axis '" + query.ranges[2].var +
                            "'; only the spatial axes (" + query.ranges[0].var +
                            ", " + query.ranges[1].var + ") are gathered, "
                            "except into a matrix per key (C[key[" +
                            query.ranges[2].var + "], " + query.ranges[0].var +
                            ", " + query.ranges[1].var + "])");
      if (axis) {
        gather = subscript->name;
        if (failed(recordGather(*subscript, *axis)))
          return failure();
      }
    }
    if (!axis)
      return report.error(subscript->at,
                          "the subscripts of '" + e.name +
                              "' must be axis variables (" +
                              query.ranges[0].var + ", " +
                              query.ranges[1].var + ", " +
                              query.ranges[2].var +
                              ") or index arrays of a spatial axis, as in " +
                              "h[" + query.ranges[0].var + "]");
    gathers.push_back(gather);
    if (llvm::is_contained(axes, *axis))
      return report.error(subscript->at, "'" + e.name + "' is indexed by '" +
                                             subscript->name + "' twice");
    axes.push_back(*axis);
  }
  bool gathered = llvm::any_of(gathers, [](const std::string &g) {
    return !g.empty();
  });
  if (axes.size() > 3 || (axes.size() == 3 && !gathered))
    return report.error(e.at, "'" + e.name +
                                  "' has more than two subscripts; a "
                                  "matmul-like task's operands are vectors "
                                  "and matrices (and, with a gathered "
                                  "subscript, one matrix per key)");
  bool spatialI = llvm::is_contained(axes, 0u);
  bool spatialJ = llvm::is_contained(axes, 1u);
  if (spatialI && spatialJ && !gathered)
    return report.error(e.at, "'" + e.name +
                                  "' is indexed by both spatial axes; an "
                                  "input of a matmul-like task has at most "
                                  "one spatial axis unless one of them is "
                                  "gathered, as in W[r[i], k, j]");
  auto [it, inserted] = arrays.try_emplace(e.name);
  ArrayInfo &info = it->second;
  if (inserted) {
    info.at = e.at;
    order.push_back(e.name);
  }
  Use use{axes, gathers};
  if (info.isInput && !llvm::is_contained(info.uses, use)) {
    // A table read through several index arrays (or along other axes) is
    // one input per use; index and key arrays are read one way.
    if (info.isKey || info.isGather || info.uses[0].axes.size() != axes.size())
      return report.error(e.at, "'" + e.name +
                                    "' is indexed differently here than at " +
                                    std::to_string(info.at.line) + ":" +
                                    std::to_string(info.at.col));
  }
  if (info.isKey && (axes.size() != 1 || axes[0] != info.axes[0]))
    return report.error(e.at, "'" + e.name +
                                  "' is a key array of the output and must "
                                  "be indexed as there");
  if (info.isGather && (axes.size() != 1 || axes[0] != info.axes[0] ||
                        gathered))
    return report.error(e.at, "'" + e.name +
                                  "' gathers another array and must be "
                                  "indexed as there");
  if (!info.isInput) {
    info.axes = axes;
    info.gathers = gathers;
  }
  if (!llvm::is_contained(info.uses, use))
    info.uses.push_back(use);
  info.isInput = true;
  (join ? info.inJoin : info.inValue) = true;
  return success();
}

LogicalResult QueryBuilder::recordGather(const Expr &e, unsigned axis) {
  if (e.name == query.acc || axisOf(e.name) ||
      (query.output && e.name == query.output->target))
    return report.error(e.at, "'" + e.name + "' is not an index array");
  auto [it, inserted] = arrays.try_emplace(e.name);
  ArrayInfo &info = it->second;
  if (inserted) {
    info.at = e.at;
    order.push_back(e.name);
  }
  if ((info.isGather || info.isKey || info.isInput) &&
      (info.axes.size() != 1 || info.axes[0] != axis || info.uses.size() > 1 ||
       llvm::any_of(info.gathers,
                    [](const std::string &g) { return !g.empty(); })))
    return report.error(e.at, "'" + e.name +
                                  "' gathers along '" +
                                  query.ranges[axis].var +
                                  "' here but is indexed differently at " +
                                  std::to_string(info.at.line) + ":" +
                                  std::to_string(info.at.col));
  info.isGather = true;
  info.axes = {axis};
  if (info.gathers.empty())
    info.gathers = {""};
  return success();
}

LogicalResult QueryBuilder::recordKey(const Expr &e, unsigned axis) {
  if (e.kind != Expr::Access || e.operands.size() != 1 ||
      e.operands[0]->kind != Expr::Name ||
      axisOf(e.operands[0]->name) != axis)
    return report.error(e.at, axis == 2
                                  ? "the key of a matrix per key must be an "
                                    "array indexed by the reduction axis '" +
                                        query.ranges[2].var + "', as in " +
                                        "etype[" + query.ranges[2].var + "]"
                                  : std::string("the ") +
                                        (axis == 0 ? "row" : "column") +
                                        " key of an aggregate output must be "
                                        "an array indexed by '" +
                                        query.ranges[axis].var + "', as in " +
                                        "Pzip[" + query.ranges[axis].var +
                                        "]");
  auto [it, inserted] = arrays.try_emplace(e.name);
  ArrayInfo &info = it->second;
  if (inserted) {
    info.at = e.at;
    order.push_back(e.name);
  }
  if (info.isInput && (info.axes.size() != 1 || info.axes[0] != axis ||
                       info.uses.size() > 1))
    return report.error(e.at, "'" + e.name +
                                  "' is indexed differently as a key than "
                                  "as an input");
  if (info.isKey && info.axes[0] != axis)
    return report.error(e.at, "'" + e.name +
                                  "' cannot key both output dimensions");
  info.isKey = true;
  info.axes = {axis};
  return success();
}

LogicalResult QueryBuilder::collect(const Expr &e, bool join) {
  if (e.kind == Expr::Access && failed(recordAccess(e, join)))
    return failure();
  if (e.kind == Expr::Access)
    return success();
  for (const ExprPtr &operand : e.operands)
    if (failed(collect(*operand, join)))
      return failure();
  return success();
}

Value QueryBuilder::toFloat(Value v, Location loc) {
  Type type = v.getType();
  if (type == floatType)
    return v;
  if (auto ft = dyn_cast<FloatType>(type))
    return ft.getWidth() < cast<FloatType>(floatType).getWidth()
               ? arith::ExtFOp::create(b, loc, floatType, v).getResult()
               : arith::TruncFOp::create(b, loc, floatType, v).getResult();
  if (type.isInteger(1))
    return arith::UIToFPOp::create(b, loc, floatType, v);
  if (type.isIndex())
    v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::SIToFPOp::create(b, loc, floatType, v);
}

Value QueryBuilder::toBool(Value v, Location loc) {
  Type type = v.getType();
  if (type.isInteger(1))
    return v;
  if (isa<FloatType>(type)) {
    Value zero = arith::ConstantOp::create(b, loc, b.getFloatAttr(type, 0.0));
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, v, zero);
  }
  Value zero = arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, 0));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, v, zero);
}

FailureOr<Value> QueryBuilder::emit(const Expr &e, Env &env) {
  Location loc = report.loc(e.at);
  switch (e.kind) {
  case Expr::Number:
    return Value(arith::ConstantOp::create(
        b, loc, b.getFloatAttr(floatType, e.number)));
  case Expr::Name: {
    if (Value v = env.names.lookup(e.name))
      return v;
    if (e.name == "inf")
      return Value(arith::ConstantOp::create(
          b, loc,
          b.getFloatAttr(floatType, std::numeric_limits<double>::infinity())));
    if (e.name == query.acc)
      return report.error(e.at, "the accumulator '" + e.name +
                                    "' is not available in the " +
                                    env.region.str());
    if (auto axis = axisOf(e.name))
      return report.error(e.at, "the axis variable '" + e.name +
                                    "' is not available in the " +
                                    env.region.str());
    return report.error(e.at, "unknown name '" + e.name + "'");
  }
  case Expr::Access: {
    if (Value v = env.arrays.lookup(accessKey(e)))
      return v;
    auto known = arrays.find(e.name);
    if (known == arrays.end())
      return report.error(e.at, "'" + e.name + "' is not available in the " +
                                    env.region.str());
    const ArrayInfo &info = known->second;
    if (info.indexes(2))
      return report.error(e.at, "'" + e.name + "' depends on the reduction "
                                "axis '" + query.ranges[2].var +
                                "', which is reduced away in the " +
                                env.region.str());
    return report.error(e.at, "'" + e.name + "' is not available in the " +
                                  env.region.str());
  }
  case Expr::Unary: {
    FailureOr<Value> operand = emit(*e.operands[0], env);
    if (failed(operand))
      return failure();
    if (e.name == "-")
      return Value(arith::NegFOp::create(b, loc, toFloat(*operand, loc)));
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    return Value(arith::XOrIOp::create(b, loc, toBool(*operand, loc), yes));
  }
  case Expr::Binary: {
    FailureOr<Value> lhs = emit(*e.operands[0], env);
    if (failed(lhs))
      return failure();
    FailureOr<Value> rhs = emit(*e.operands[1], env);
    if (failed(rhs))
      return failure();
    StringRef op = e.name;
    if (op == "&&" || op == "||") {
      Value l = toBool(*lhs, loc), r = toBool(*rhs, loc);
      return op == "&&" ? Value(arith::AndIOp::create(b, loc, l, r))
                        : Value(arith::OrIOp::create(b, loc, l, r));
    }
    Type lt = lhs->getType(), rt = rhs->getType();
    bool integers = lt == rt && isa<IntegerType, IndexType>(lt) &&
                    !lt.isInteger(1);
    if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" ||
        op == ">=") {
      if (integers) {
        auto pred = llvm::StringSwitch<arith::CmpIPredicate>(op)
                        .Case("==", arith::CmpIPredicate::eq)
                        .Case("!=", arith::CmpIPredicate::ne)
                        .Case("<", arith::CmpIPredicate::slt)
                        .Case(">", arith::CmpIPredicate::sgt)
                        .Case("<=", arith::CmpIPredicate::sle)
                        .Default(arith::CmpIPredicate::sge);
        return Value(arith::CmpIOp::create(b, loc, pred, *lhs, *rhs));
      }
      auto pred = llvm::StringSwitch<arith::CmpFPredicate>(op)
                      .Case("==", arith::CmpFPredicate::OEQ)
                      .Case("!=", arith::CmpFPredicate::UNE)
                      .Case("<", arith::CmpFPredicate::OLT)
                      .Case(">", arith::CmpFPredicate::OGT)
                      .Case("<=", arith::CmpFPredicate::OLE)
                      .Default(arith::CmpFPredicate::OGE);
      return Value(arith::CmpFOp::create(b, loc, pred, toFloat(*lhs, loc),
                                         toFloat(*rhs, loc)));
    }
    Value l = toFloat(*lhs, loc), r = toFloat(*rhs, loc);
    if (op == "+")
      return Value(arith::AddFOp::create(b, loc, l, r));
    if (op == "-")
      return Value(arith::SubFOp::create(b, loc, l, r));
    if (op == "*")
      return Value(arith::MulFOp::create(b, loc, l, r));
    return Value(arith::DivFOp::create(b, loc, l, r));
  }
  case Expr::Choose: {
    FailureOr<Value> cond = emit(*e.operands[0], env);
    if (failed(cond))
      return failure();
    FailureOr<Value> lhs = emit(*e.operands[1], env);
    if (failed(lhs))
      return failure();
    FailureOr<Value> rhs = emit(*e.operands[2], env);
    if (failed(rhs))
      return failure();
    return Value(arith::SelectOp::create(b, loc, toBool(*cond, loc),
                                         toFloat(*lhs, loc),
                                         toFloat(*rhs, loc)));
  }
  case Expr::Call: {
    SmallVector<Value> args;
    for (const ExprPtr &operand : e.operands) {
      FailureOr<Value> v = emit(*operand, env);
      if (failed(v))
        return failure();
      args.push_back(toFloat(*v, loc));
    }
    StringRef fn = e.name;
    unsigned arity = (fn == "max" || fn == "min" || fn == "pow") ? 2 : 1;
    static const char *kFunctions[] = {"exp",  "log",  "sqrt", "abs", "tanh",
                                       "sigmoid", "max", "min", "pow"};
    if (!llvm::is_contained(kFunctions, fn))
      return report.error(e.at, "unknown function '" + fn +
                                    "': use exp, log, sqrt, abs, tanh, "
                                    "sigmoid, max, min or pow");
    if (args.size() != arity)
      return report.error(e.at, "'" + fn + "' takes " +
                                    std::to_string(arity) + " argument" +
                                    (arity > 1 ? "s" : "") + ", got " +
                                    std::to_string(args.size()));
    if (fn == "exp")
      return Value(math::ExpOp::create(b, loc, args[0]));
    if (fn == "log")
      return Value(math::LogOp::create(b, loc, args[0]));
    if (fn == "sqrt")
      return Value(math::SqrtOp::create(b, loc, args[0]));
    if (fn == "abs")
      return Value(math::AbsFOp::create(b, loc, args[0]));
    if (fn == "tanh")
      return Value(math::TanhOp::create(b, loc, args[0]));
    if (fn == "pow")
      return Value(math::PowFOp::create(b, loc, args[0], args[1]));
    if (fn == "max")
      return Value(arith::MaximumFOp::create(b, loc, args[0], args[1]));
    if (fn == "min")
      return Value(arith::MinimumFOp::create(b, loc, args[0], args[1]));
    // sigmoid(x) = 1 / (1 + exp(-x))
    Value one = arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, 1));
    Value negated = arith::NegFOp::create(b, loc, args[0]);
    Value denominator = arith::AddFOp::create(
        b, loc, one, math::ExpOp::create(b, loc, negated));
    return Value(arith::DivFOp::create(b, loc, one, denominator));
  }
  }
  llvm_unreachable("unknown expression kind");
}

/// The initialization must be a constant: a number, `inf` or a negation.
static std::optional<double> constantOf(const Expr &e) {
  if (e.kind == Expr::Number)
    return e.number;
  if (e.kind == Expr::Name && e.name == "inf")
    return std::numeric_limits<double>::infinity();
  if (e.kind == Expr::Unary && e.name == "-")
    if (auto v = constantOf(*e.operands[0]))
      return -*v;
  return std::nullopt;
}

bool QueryBuilder::startsFromIdentity() {
  if (query.accumulate == Combiner::custom)
    return true;
  TypedAttr identity = getCombinerIdentity(query.accumulate, floatType);
  return cast<FloatAttr>(identity).getValueAsDouble() == *initConstant;
}

Value QueryBuilder::foldedAccumulator(Value acc, Location loc) {
  // A built-in accumulator starts from its identity; another initial value
  // is combined in after the reduction.
  if (startsFromIdentity())
    return acc;
  Value init = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(floatType, *initConstant));
  return buildCombination(b, loc, query.accumulate, acc, init);
}

FailureOr<Value> QueryBuilder::convertTo(Value v, Type type, Location loc) {
  if (v.getType() == type)
    return v;
  if (isa<FloatType>(type)) {
    Value f = toFloat(v, loc);
    if (f.getType() == type)
      return f;
    auto ft = cast<FloatType>(type);
    return ft.getWidth() < cast<FloatType>(f.getType()).getWidth()
               ? Value(arith::TruncFOp::create(b, loc, type, f))
               : Value(arith::ExtFOp::create(b, loc, type, f));
  }
  if (v.getType().isInteger(1))
    return Value(arith::ExtUIOp::create(b, loc, type, v));
  if (isa<FloatType>(v.getType()))
    return Value(arith::FPToSIOp::create(b, loc, type, v));
  return Value(arith::ExtSIOp::create(b, loc, type, v));
}

OwningOpRef<ModuleOp> QueryBuilder::build() {
  // Axes.
  for (unsigned a = 0; a < 3; ++a)
    for (unsigned c = 0; c < a; ++c)
      if (query.ranges[a].var == query.ranges[c].var)
        return failAt(query.ranges[a].at,
                            "axis '" + query.ranges[a].var +
                                "' is declared twice");
  OutputStmt &out = *query.output;

  // Arrays and their kinds, in order of appearance.
  for (const Expr *e : {query.when.get(), query.inner.get(), out.value.get(),
                        out.condition.get()})
    if (e && failed(collect(*e, e == query.when.get())))
      return nullptr;
  if (out.kind == OutputStmt::Aggregate)
    for (unsigned axis = 0; axis < 2; ++axis)
      if (failed(recordKey(*out.subscripts[axis], axis)))
        return nullptr;
  auto isAxis = [&](const Expr &s, unsigned axis) {
    return s.kind == Expr::Name && s.name == query.ranges[axis].var;
  };
  if (out.kind == OutputStmt::Reduce) {
    if (!isAxis(*out.subscripts[0], 0))
      return failAt(out.subscripts[0]->at,
                    "a reduce output is indexed by the row axis '" +
                        query.ranges[0].var + "' (a row's values combine "
                        "along '" + query.ranges[1].var + "'), as in " +
                        out.target + "[" + query.ranges[0].var + "]");
    if (out.finalize) {
      if (!isAxis(*out.finalizeSubscript, 0))
        return failAt(out.finalizeSubscript->at,
                      "the finalization of '" + out.target +
                          "' is written " + out.target + "[" +
                          query.ranges[0].var + "] = e");
      // It reads the row's reduced value and the row's index only.
      SmallVector<const Expr *> pending = {out.finalize.get()};
      while (!pending.empty()) {
        const Expr *e = pending.pop_back_val();
        if (e->kind == Expr::Access) {
          if (e->name != out.target || e->operands.size() != 1 ||
              !isAxis(*e->operands[0], 0))
            return failAt(e->at, "the finalization of '" + out.target +
                                     "' reads only " + out.target + "[" +
                                     query.ranges[0].var + "] and " +
                                     query.ranges[0].var + ", not '" +
                                     e->name + "[...]'");
          continue;
        }
        for (const ExprPtr &operand : e->operands)
          pending.push_back(operand.get());
      }
    }
  }
  if (out.kind == OutputStmt::PerKey) {
    if (failed(recordKey(*out.subscripts[0], 2)))
      return nullptr;
    if (!isAxis(*out.subscripts[1], 0) || !isAxis(*out.subscripts[2], 1))
      return failAt(out.subscripts[1]->at,
                    "a matrix per key is indexed by its key, then the two "
                    "spatial axes: " + out.target + "[" +
                        out.subscripts[0]->name + "[" + query.ranges[2].var +
                        "], " + query.ranges[0].var + ", " +
                        query.ranges[1].var + "]");
    if (out.value->kind != Expr::Name || out.value->name != query.acc)
      return failAt(out.value->at,
                    "a matrix per key adds the accumulator '" + query.acc +
                        "' of each key's steps as it is: write " +
                        out.target + "[...] += " + query.acc +
                        " (compute inside the reduction)");
    if (out.aggregate != query.accumulate)
      return failAt(out.at, std::string("a matrix per key combines with the "
                                        "accumulator's combination (") +
                                stringifyCombiner(query.accumulate) +
                                "), not " +
                                stringifyCombiner(out.aggregate));
    if (query.when)
      return failAt(query.when->at, "a matrix per key takes every pair: no "
                                    "'when'");
  }
  if (out.kind == OutputStmt::Dense)
    for (unsigned d = 0; d < 2; ++d) {
      const Expr &s = *out.subscripts[d];
      std::optional<unsigned> axis =
          s.kind == Expr::Name ? axisOf(s.name) : std::nullopt;
      if (!axis || *axis == 2 ||
          (d == 1 && axisOf(out.subscripts[0]->name) == axis))
        return failAt(s.at, "the output '" + out.target +
                                      "' must be indexed by the two spatial "
                                      "axes (" +
                                      query.ranges[0].var + ", " +
                                      query.ranges[1].var + ") or by key "
                                      "arrays");
    }
  if (arrays.count(out.target))
    return failAt(out.at, "the output '" + out.target +
                                    "' cannot be read by the query");
  if (!(initConstant = constantOf(*query.init)))
    return failAt(query.init->at, "the accumulator's initial value "
                                        "must be a constant");
  if (out.kind == OutputStmt::PerKey && query.accumulate != Combiner::custom &&
      cast<FloatAttr>(getCombinerIdentity(query.accumulate, b.getF64Type()))
              .getValueAsDouble() != *initConstant)
    return failAt(query.init->at, "a matrix per key starts every key's "
                                  "reduction at the accumulator's identity");

  // Element types.
  bool anyF64 = false;
  for (auto &[name, info] : arrays) {
    // Keys of the output and arrays only the join reads hold integers.
    bool integral = info.isKey || (info.isGather && !info.inValue) ||
                    (info.inJoin && !info.inValue);
    FailureOr<Type> type = typeNamed(
        info.at, name, integral ? Type(b.getI32Type()) : Type(b.getF32Type()));
    if (failed(type))
      return nullptr;
    if (info.isKey && !type->isInteger(32) && !type->isInteger(64))
      return failAt(info.at, "the key array '" + name +
                                       "' must be i32 or i64");
    if (info.isGather && !type->isInteger(32) && !type->isInteger(64))
      return failAt(info.at, "the index array '" + name +
                                       "' must be i32 or i64");
    info.elementType = *type;
    anyF64 |= type->isF64();
  }
  floatType = anyF64 ? Type(b.getF64Type()) : Type(b.getF32Type());
  FailureOr<Type> valueType = typeNamed(out.at, out.target, floatType);
  if (failed(valueType))
    return nullptr;
  if (out.kind == OutputStmt::PerKey && *valueType != floatType) {
    std::string computed, given;
    llvm::raw_string_ostream(computed) << floatType;
    llvm::raw_string_ostream(given) << *valueType;
    return failAt(out.at, "the matrices per key hold the accumulator's type " +
                              computed + ", not " + given);
  }

  // The function: inputs and keys in order of appearance, then outputs.
  Location loc = report.loc(query.ranges[0].at);
  auto dimOf = [&](unsigned axis) { return query.ranges[axis].size; };
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  SmallVector<Value> inputs, keys(2), gathers;
  SmallVector<Attribute> maps, gathered;
  for (const std::string &name : order) {
    ArrayInfo &info = arrays.at(name);
    SmallVector<int64_t> shape;
    // A gathered subscript is a table of its own size; a dimension that
    // uses read along different axes has its size checked when run.
    for (auto [d, axis] : llvm::enumerate(info.axes)) {
      bool free = d < info.gathers.size() && !info.gathers[d].empty();
      for (const Use &use : info.uses)
        free |= use.axes[d] != axis ||
                (d < use.gathers.size() && !use.gathers[d].empty());
      shape.push_back(free ? ShapedType::kDynamic : dimOf(axis));
    }
    info.argNumber = argTypes.size();
    argTypes.push_back(MemRefType::get(shape, info.elementType));
    argNames.push_back(name);
  }
  auto addOutput = [&](const std::string &name, ArrayRef<int64_t> shape,
                       Type element) {
    argTypes.push_back(MemRefType::get(shape, element));
    argNames.push_back(name);
  };
  int64_t dyn = ShapedType::kDynamic;
  std::string t = out.target;
  switch (out.kind) {
  case OutputStmt::Dense: {
    unsigned first = *axisOf(out.subscripts[0]->name);
    addOutput(t, {dimOf(first), dimOf(1 - first)}, *valueType);
    break;
  }
  case OutputStmt::Aggregate:
    addOutput(t, {dyn, dyn}, *valueType);
    break;
  case OutputStmt::Reduce:
    addOutput(t, {dimOf(0)}, *valueType);
    break;
  case OutputStmt::PerKey:
    addOutput(t, {dyn, dimOf(0), dimOf(1)}, *valueType);
    break;
  case OutputStmt::Select:
    addOutput(t + "_rows", {dyn}, b.getI32Type());
    addOutput(t + "_cols", {dyn}, b.getI32Type());
    addOutput(t + "_values", {dyn}, *valueType);
    addOutput(t + "_count", {1}, b.getI64Type());
    break;
  case OutputStmt::Top:
    addOutput(t + "_values", {out.k}, *valueType);
    addOutput(t + "_rows", {out.k}, b.getI32Type());
    addOutput(t + "_cols", {out.k}, b.getI32Type());
    break;
  case OutputStmt::Distinct:
    addOutput(t + "_values", {dyn}, *valueType);
    addOutput(t + "_count", {1}, b.getI64Type());
    break;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, loc, options.name,
                                   b.getFunctionType(argTypes, {}));
  for (auto [n, name] : llvm::enumerate(argNames))
    func.setArgAttr(n, "kge.param", b.getStringAttr(name));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToStart(body);

  // One task input per use of an array, named by its use key.
  SmallVector<std::string> inputNames;
  for (const std::string &name : order) {
    const ArrayInfo &info = arrays.at(name);
    if (!info.isInput)
      continue;
    for (const Use &use : info.uses) {
      for (auto [d, gather] : llvm::enumerate(use.gathers))
        if (!gather.empty()) {
          gathers.push_back(body->getArgument(arrays.at(gather).argNumber));
          gathered.push_back(b.getI64ArrayAttr(
              {static_cast<int64_t>(inputs.size()), static_cast<int64_t>(d)}));
        }
      inputs.push_back(body->getArgument(info.argNumber));
      inputNames.push_back(useKey(name, use));
      SmallVector<AffineExpr> results;
      for (unsigned axis : use.axes)
        results.push_back(b.getAffineDimExpr(axis));
      maps.push_back(
          AffineMapAttr::get(AffineMap::get(3, 0, results, context)));
    }
  }
  if (inputs.empty() || llvm::none_of(order, [&](const std::string &name) {
        const ArrayInfo &info = arrays.at(name);
        return info.isInput && info.indexes(2);
      }))
    return failAt(query.ranges[2].at,
                        "no array is indexed by the reduction axis '" +
                            query.ranges[2].var + "'");
  if (out.kind == OutputStmt::Aggregate)
    for (unsigned axis = 0; axis < 2; ++axis)
      keys[axis] = body->getArgument(
          arrays.at(out.subscripts[axis]->name).argNumber);
  else if (out.kind == OutputStmt::PerKey)
    keys = {body->getArgument(arrays.at(out.subscripts[0]->name).argNumber)};
  else
    keys.clear();
  SmallVector<Value> outputs;
  for (unsigned n = order.size(); n < argTypes.size(); ++n)
    outputs.push_back(body->getArgument(n));
  // The outputs that give an axis its extent: dense (i, j), reduce (i),
  // per key (i, j).
  auto outputIndexes = [&](unsigned axis) {
    return out.kind == OutputStmt::Dense || out.kind == OutputStmt::PerKey ||
           (out.kind == OutputStmt::Reduce && axis == 0);
  };
  for (unsigned axis = 0; axis < 2; ++axis)
    if (!outputIndexes(axis) &&
        llvm::none_of(order, [&](const std::string &name) {
          return arrays.at(name).indexes(axis);
        }))
      return failAt(query.ranges[axis].at,
                          "no array is indexed by the spatial axis '" +
                              query.ranges[axis].var +
                              "', so its extent is unknown");

  static const OutputKind kKinds[] = {
      OutputKind::dense,    OutputKind::aggregate, OutputKind::select,
      OutputKind::top_k,    OutputKind::distinct,  OutputKind::reduce,
      OutputKind::per_key};
  auto task = TaskOp::create(
      b, loc, inputs, keys, outputs, gathers, b.getArrayAttr(maps),
      CombinerAttr::get(context, query.accumulate),
      OutputKindAttr::get(context, kKinds[out.kind]), TypedAttr(),
      UnitAttr(), CombinerAttr(), IntegerAttr(), UnitAttr(), AffineMapAttr(),
      UnitAttr(), gathered.empty() ? ArrayAttr() : b.getArrayAttr(gathered));
  func::ReturnOp::create(b, loc);

  if (query.accumulate == Combiner::custom) {
    task.setIdentityAttr(b.getFloatAttr(floatType, *initConstant));
    task.setAssociative(true);
  }
  if ((out.kind == OutputStmt::Aggregate || out.kind == OutputStmt::Reduce) &&
      out.aggregate != Combiner::add)
    task.setAggregateAttr(CombinerAttr::get(context, out.aggregate));
  if (out.kind == OutputStmt::Top) {
    task.setKAttr(b.getI64IntegerAttr(out.k));
    task.setSmallest(out.smallest);
  }
  if (out.kind == OutputStmt::Dense && *axisOf(out.subscripts[0]->name) == 1)
    task.setOutputMapAttr(AffineMapAttr::get(AffineMap::get(
        3, 0, {b.getAffineDimExpr(1), b.getAffineDimExpr(0)}, context)));

  // Regions.
  Type indexType = b.getIndexType();
  SmallVector<unsigned> spatial = task.spatialOnlyInputs();
  auto newBlock = [&](Region &region, ArrayRef<Type> types) {
    Block *block = b.createBlock(&region);
    for (Type type : types)
      block->addArgument(type, loc);
    return block;
  };
  auto pairEnv = [&](Block *block, unsigned first, Env &env) {
    env.names[query.ranges[0].var] = block->getArgument(first);
    env.names[query.ranges[1].var] = block->getArgument(first + 1);
    for (auto [n, index] : llvm::enumerate(spatial))
      env.arrays[inputNames[index]] = block->getArgument(first + 2 + n);
  };
  SmallVector<Type> pairTypes = {indexType, indexType};
  for (unsigned index : spatial)
    pairTypes.push_back(
        cast<MemRefType>(inputs[index].getType()).getElementType());
  auto finish = [&](FailureOr<Value> v, Location at) {
    if (failed(v))
      return false;
    YieldOp::create(b, at, *v);
    return true;
  };

  // inner
  {
    SmallVector<Type> types;
    for (Value input : inputs)
      types.push_back(cast<MemRefType>(input.getType()).getElementType());
    Block *block = newBlock(task.getInner(), types);
    Env env;
    env.region = "reduction";
    for (auto [n, name] : llvm::enumerate(inputNames))
      env.arrays[name] = block->getArgument(n);
    FailureOr<Value> v = emit(*query.inner, env);
    if (succeeded(v))
      v = Value(toFloat(*v, report.loc(query.inner->at)));
    if (!finish(v, report.loc(query.inner->at)))
      return nullptr;
  }
  // combine
  if (query.accumulate == Combiner::custom) {
    Block *block = newBlock(task.getCombine(), {floatType, floatType});
    Env env;
    env.region = "combination";
    env.names[query.combine->lhs] = block->getArgument(0);
    env.names[query.combine->rhs] = block->getArgument(1);
    FailureOr<Value> v = emit(*query.combine->body, env);
    if (succeeded(v))
      v = Value(toFloat(*v, report.loc(query.combine->at)));
    if (!finish(v, report.loc(query.combine->at)))
      return nullptr;
  }
  // when
  if (query.when) {
    Block *block = newBlock(task.getWhen(), pairTypes);
    Env env;
    env.region = "join condition";
    pairEnv(block, 0, env);
    FailureOr<Value> v = emit(*query.when, env);
    if (succeeded(v))
      v = toBool(*v, report.loc(query.when->at));
    if (!finish(v, report.loc(query.when->at)))
      return nullptr;
  }
  // project: needed unless the value is the plain accumulator. A reduce
  // output's row values combine in the computation's type; finalize rounds
  // them to the stored type.
  Location valueLoc = report.loc(out.value->at);
  Type projected =
      out.kind == OutputStmt::Reduce ? floatType : Type(*valueType);
  bool plain = out.value->kind == Expr::Name && out.value->name == query.acc &&
               projected == floatType && startsFromIdentity();
  if (!plain) {
    SmallVector<Type> types = {floatType};
    llvm::append_range(types, pairTypes);
    Block *block = newBlock(task.getProject(), types);
    Env env;
    env.region = "output statement";
    pairEnv(block, 1, env);
    env.names[query.acc] = foldedAccumulator(block->getArgument(0), valueLoc);
    FailureOr<Value> v = emit(*out.value, env);
    if (succeeded(v))
      v = convertTo(*v, projected, valueLoc);
    if (!finish(v, valueLoc))
      return nullptr;
  }
  // finalize
  if (out.kind == OutputStmt::Reduce &&
      (out.finalize || *valueType != floatType)) {
    Block *block = newBlock(task.getFinalize(), {floatType, indexType});
    Env env;
    env.region = "finalization";
    env.names[query.ranges[0].var] = block->getArgument(1);
    env.arrays[out.target + "[" + query.ranges[0].var + "]"] =
        block->getArgument(0);
    Location at = report.loc(out.finalize ? out.finalize->at : out.at);
    FailureOr<Value> v = out.finalize ? emit(*out.finalize, env)
                                      : FailureOr<Value>(block->getArgument(0));
    if (succeeded(v))
      v = convertTo(*v, *valueType, at);
    if (!finish(v, at))
      return nullptr;
  }
  // predicate
  if (out.condition) {
    SmallVector<Type> types = {*valueType, floatType};
    llvm::append_range(types, pairTypes);
    Block *block = newBlock(task.getPredicate(), types);
    Env env;
    env.region = "condition";
    pairEnv(block, 2, env);
    Location condLoc = report.loc(out.condition->at);
    env.names[query.acc] = foldedAccumulator(block->getArgument(1), condLoc);
    FailureOr<Value> v = emit(*out.condition, env);
    if (succeeded(v))
      v = toBool(*v, condLoc);
    if (!finish(v, condLoc))
      return nullptr;
  }

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

OwningOpRef<ModuleOp> mlir::tile::parseQuery(StringRef text,
                                             MLIRContext *context,
                                             const QueryOptions &options) {
  context->loadDialect<TileIteratorDialect, arith::ArithDialect,
                       func::FuncDialect, math::MathDialect>();
  Reporter report(context, options.bufferName);
  std::vector<Token> tokens;
  if (failed(lex(text, report, tokens)))
    return nullptr;
  Query query;
  Parser parser(std::move(tokens), report);
  if (failed(parser.parse(query)))
    return nullptr;
  return QueryBuilder(query, report, context, options).build();
}
