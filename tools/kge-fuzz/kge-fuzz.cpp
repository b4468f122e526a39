//===- kge-fuzz.cpp - mutation fuzzer of KGE's parsers and pipelines ------===//
//
// Feeds mutated IR to what kge-opt and kge-translate do with untrusted
// input: the parser of every dialect KGE registers, the verifiers, and the
// pass pipelines (canonicalization, bvec-fuse, bvec-differentiate,
// kge-lower-to-cpu, kge-lower-to-gpu in both modes) and the bundle
// translation. Queries in
// GAMUT's syntax (.gamut files of the corpus) go through the query parser
// (kge-translate --import-gamut) and then the same pipelines.
//
//   kge-fuzz --corpus test --corpus examples --seconds 600 --seed 1
//   kge-fuzz --replay test/fuzz/regressions/*.mlir
//
// Inputs start from a corpus of .mlir files (split at `// -----`) and get
// one to four mutations: numbers, sizes and `?` exchanged, operation and
// type names exchanged within the dialect, element types, attribute values,
// SSA names, lines deleted, duplicated, swapped or spliced from another
// input, bytes inserted, deleted or flipped, truncation. Every diagnostic
// is expected; a crash, an assertion, a sanitizer report or an input that
// takes longer than --timeout-ms is a failure: the input is written to
// --crash-dir (crash-<n>.mlir / hang-<n>.mlir) before the process dies, to
// be fixed and kept as a regression in test/fuzz/regressions.
//
// The run ends with one line per stage (inputs that reached it, how many
// passed) and "N inputs, 0 crashes, 0 hangs".
//
//===----------------------------------------------------------------------===//

#include "Dialect/TileIterator/Query/QueryParser.h"
#include "InitAll.h"
#include "Target/Bundle.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <random>
#include <unistd.h>

using namespace mlir;

namespace cl = llvm::cl;

static cl::list<std::string> corpusDirs("corpus",
                                        cl::desc("directory of .mlir seeds "
                                                 "(searched recursively)"));
static cl::list<std::string> replayFiles("replay", cl::Positional,
                                         cl::desc("inputs to run unmutated"));
static cl::opt<uint64_t> iterations("iterations",
                                    cl::desc("mutated inputs to run (0: no "
                                             "limit)"),
                                    cl::init(0));
static cl::opt<double> seconds("seconds",
                               cl::desc("time budget in seconds (0: no limit)"),
                               cl::init(0));
static cl::opt<uint64_t> minPipelineRuns(
    "min-pipeline-runs",
    cl::desc("keep going until every pipeline has run on this many inputs "
             "(within the other budgets)"),
    cl::init(0));
static cl::opt<unsigned> seed("seed", cl::desc("random seed"), cl::init(1));
static cl::opt<unsigned> timeoutMs("timeout-ms",
                                   cl::desc("per-input time limit"),
                                   cl::init(20000));
static cl::opt<std::string> crashDir("crash-dir",
                                     cl::desc("where failing inputs go"),
                                     cl::init("."));
static cl::opt<bool> verbose("v", cl::desc("print every input's outcome"));
static cl::opt<std::string>
    saveInputs("save-inputs",
               cl::desc("write every input to DIR/input-<n>.mlir before "
                        "running it (to replay a corruption found late)"),
               cl::value_desc("DIR"));

//===----------------------------------------------------------------------===//
// Failure capture: the current input is written out from the crash and
// timeout handlers (only async-signal-safe calls there).
//===----------------------------------------------------------------------===//

static std::string currentInput;
static std::string crashPath, hangPath;

static void writeCurrentInput(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return;
  const char *data = currentInput.data();
  size_t left = currentInput.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n <= 0)
      break;
    data += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
}

static void onCrash(void *) {
  writeCurrentInput(crashPath);
  const char message[] = "\nkge-fuzz: CRASH; the input is in the crash directory\n";
  (void)!::write(2, message, sizeof(message) - 1);
}

static void onAlarm(int) {
  writeCurrentInput(hangPath);
  const char message[] = "\nkge-fuzz: HANG (input over --timeout-ms)\n";
  (void)!::write(2, message, sizeof(message) - 1);
  ::_exit(3);
}

//===----------------------------------------------------------------------===//
// Corpus and mutations
//===----------------------------------------------------------------------===//

/// The first line of corpus entries that are GAMUT queries, not IR.
static constexpr llvm::StringLiteral kQueryMarker = "// gamut query\n";

static void addInputs(StringRef text, std::vector<std::string> &out) {
  SmallVector<StringRef> parts;
  text.split(parts, "// -----");
  for (StringRef part : parts) {
    std::string chunk;
    // Drop RUN/CHECK lines: they only add noise.
    SmallVector<StringRef> lines;
    part.split(lines, '\n');
    for (StringRef line : lines)
      if (!line.trim().starts_with("// RUN") &&
          !line.trim().starts_with("// CHECK") &&
          !line.trim().starts_with("// expected-"))
        chunk += (line + "\n").str();
    if (StringRef(chunk).trim().size() > 10)
      out.push_back(std::move(chunk));
  }
}

static std::vector<std::string> loadCorpus() {
  std::vector<std::string> inputs;
  for (const std::string &dir : corpusDirs) {
    std::error_code ec;
    for (llvm::sys::fs::recursive_directory_iterator it(dir, ec), end;
         it != end && !ec; it.increment(ec)) {
      StringRef extension = llvm::sys::path::extension(it->path());
      if (extension != ".mlir" && extension != ".gamut")
        continue;
      auto buffer = llvm::MemoryBuffer::getFile(it->path());
      if (!buffer)
        continue;
      if (extension == ".gamut")
        inputs.push_back((kQueryMarker + (*buffer)->getBuffer()).str());
      else
        addInputs((*buffer)->getBuffer(), inputs);
    }
  }
  return inputs;
}

class Mutator {
public:
  Mutator(const std::vector<std::string> &corpus, unsigned seed)
      : corpus(corpus), rng(seed) {}

  std::string next() {
    std::string text = corpus[pick(corpus.size())];
    // Mostly one mutation (inputs stay close to valid IR and reach the
    // pipelines), sometimes up to four.
    unsigned count = pick(2) ? 1 : 1 + pick(4);
    for (unsigned i = 0; i < count; ++i)
      mutate(text);
    return text;
  }

private:
  size_t pick(size_t n) {
    return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng) : 0;
  }
  template <typename T> const T &choose(const std::vector<T> &v) {
    return v[pick(v.size())];
  }

  /// Positions of the occurrences of any of `words` in `text`.
  static std::vector<std::pair<size_t, std::string>>
  find(const std::string &text, const std::vector<std::string> &words) {
    std::vector<std::pair<size_t, std::string>> hits;
    for (const std::string &w : words)
      for (size_t at = text.find(w); at != std::string::npos;
           at = text.find(w, at + 1))
        hits.emplace_back(at, w);
    return hits;
  }

  bool replaceOneOf(std::string &text, const std::vector<std::string> &words) {
    auto hits = find(text, words);
    if (hits.empty())
      return false;
    auto [at, word] = hits[pick(hits.size())];
    text.replace(at, word.size(), choose(words));
    return true;
  }

  void mutate(std::string &text) {
    static const std::vector<std::string> ops = {
        "bvec.gather_vec", "bvec.gather_mat",    "bvec.add",
        "bvec.sub",        "bvec.mul",           "bvec.div",
        "bvec.max",        "bvec.min",           "bvec.neg",
        "bvec.abs",        "bvec.exp",           "bvec.log",
        "bvec.sqrt",       "bvec.tanh",          "bvec.sigmoid",
        "bvec.sin",        "bvec.cos",           "bvec.scal_mul_vec",
        "bvec.vec_mul_vec", "bvec.vec_mul_mat",  "bvec.vec_outer_vec",
        "bvec.norm",       "bvec.reduce",        "bvec.slice",
        "bvec.sign",       "bvec.pad",           "bvec.mat_mul_vec",
        "!bvec.scalar<?xf32>",
        "bvec.constant",   "bvec.return",        "bvec.func",
        "tile.task",       "tile.yield",         "accumulate add",
        "accumulate mul",  "accumulate max",     "accumulate custom",
        "output dense",    "output aggregate",   "output select",
        "output top_k",    "output distinct",    "inner",
        "combine",         "project",            "predicate",
        "when",            "schedule",           "tile.kernel",
        "tile.load",       "tile.mma",           "tile.compute",
        "tile.store",      "!tile.tile<",        "block [",
        "thread [",        "stages",             "cluster_m",
        "min_k",           "input",              "dense",
        "gathered",        "per_key",            "sorted",
        "via registers",   "via shared",         "via async",
        "via tma",         "warpgroup",          "tf32",
        "tf32x3",          "bf16",               "staged",
        "scatter",         "compact",            "top_k",
        "update",          "with",               "graph.coo",
        "graph.typed_linear", "graph.linear",    "graph.aggregate",
        "rows(src)",       "rows(dst)",          "rows(edges)",
        "rows(nodes)",     "by(etype)",          "by(ntype)",
        "by(src_ntype)",   "to(dst)",            "to(src)",
        "reduce(sum)",     "ntypes(",            "weights(",
        "bias(",           "nodes(",             "!graph.graph",
        "graph.outer_sum", "transposed",         "rows(src, dst)",
        "rows(nodes, nodes)", "types(",          "output per_key",
        "split_k",         "graph.edge_softmax", "graph.leaky_relu",
        "graph.inner_product", "graph.edge_softmax_grad",
        "graph.leaky_relu_grad", "slope(",       "rows(dst, edges)",
        "tensor<?x1xf32>", "tensor<?x?x1xf32>",  "kge.name",
        "output reduce"};
    // Words of GAMUT's query syntax.
    static const std::vector<std::string> query = {
        "where", "when", "reduce", "in", "+=", "*=", "=", "max(", "min(",
        "combine(", ".put(", ".top(", ".bottom(", ".distinct(", "if (",
        "associative combine(a, b) = a * b;", "accum", "[i, k]", "[k, j]",
        "[k]", "[i]", "[j]", "[i, j]", "[j, i]", "Pzip[i]", "?", ":",
        "&&", "||", "!", "inf", "exp(", "sigmoid(", "pow(", "/*", "//"};
    static const std::vector<std::string> types = {
        "!bvec.table<", "!bvec.indices<", "!bvec.scalar<", "!bvec.vec<",
        "!bvec.mat<",   "memref<",        "tensor<",       "vector<"};
    static const std::vector<std::string> elements = {
        "f32", "f64", "f16", "bf16", "i32", "i64", "i1", "index", "f8E4M3FN"};
    static const std::vector<std::string> numbers = {
        "0", "1", "2", "3", "4", "7", "16", "64", "128", "4096", "?",
        "-1", "2147483647", "2147483648", "9223372036854775807",
        "-9223372036854775808", "18446744073709551616", "1.5", "0x7fc00000"};
    static const std::vector<std::string> words = {
        "p = 1", "p = 2", "p = 0", "p = -3", "sum", "mean", "max", "min",
        "prod", "{bvec.kernel = {}}", "{bvec.stage = 5 : i64}",
        "{bvec.materialize}", "attributes {bvec.kernel = {tile = 0 : i64, "
        "warps = 0 : i64, vector_width = 3 : i64, reorder_key = \"q\", "
        "reorder_group = -2 : i64, stages = 0 : i64}}",
        "gpu.module @m {}", "%", "(", ")", "[", "]", "<", ">", ",", ":",
        "->", "x", "\"", "{", "}"};

    switch (pick(14)) {
    case 0: // A number or size.
    case 1: {
      std::vector<size_t> positions;
      for (size_t i = 0; i < text.size(); ++i)
        if ((std::isdigit(static_cast<unsigned char>(text[i])) ||
             text[i] == '?') &&
            (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]))))
          positions.push_back(i);
      if (positions.empty())
        return;
      size_t at = positions[pick(positions.size())], end = at + 1;
      while (end < text.size() &&
             std::isdigit(static_cast<unsigned char>(text[end])))
        ++end;
      text.replace(at, end - at, choose(numbers));
      return;
    }
    case 2:
      replaceOneOf(text, ops);
      return;
    case 3:
      replaceOneOf(text, types);
      return;
    case 4:
      replaceOneOf(text, elements);
      return;
    case 5: { // An SSA name by another.
      std::vector<std::pair<size_t, size_t>> names;
      for (size_t i = 0; i < text.size(); ++i)
        if (text[i] == '%') {
          size_t end = i + 1;
          while (end < text.size() &&
                 (std::isalnum(static_cast<unsigned char>(text[end])) ||
                  text[end] == '_'))
            ++end;
          names.emplace_back(i, end - i);
        }
      if (names.size() < 2)
        return;
      auto [at, len] = names[pick(names.size())];
      auto [from, flen] = names[pick(names.size())];
      std::string replacement = text.substr(from, flen);
      text.replace(at, len, replacement);
      return;
    }
    case 6:
    case 7:
    case 8: { // Lines: delete, duplicate, swap, splice.
      SmallVector<StringRef> parts;
      StringRef(text).split(parts, '\n');
      std::vector<std::string> lines(parts.begin(), parts.end());
      if (lines.empty())
        return;
      size_t a = pick(lines.size()), b = pick(lines.size());
      switch (pick(4)) {
      case 0:
        lines.erase(lines.begin() + a);
        break;
      case 1:
        lines.insert(lines.begin() + a, lines[b]);
        break;
      case 2:
        std::swap(lines[a], lines[b]);
        break;
      default: {
        SmallVector<StringRef> other;
        StringRef(corpus[pick(corpus.size())]).split(other, '\n');
        if (!other.empty())
          lines.insert(lines.begin() + a, other[pick(other.size())].str());
      }
      }
      text = llvm::join(lines, "\n");
      return;
    }
    case 9: // A token or attribute inserted.
      text.insert(pick(text.size() + 1),
                  StringRef(text).starts_with(kQueryMarker) && pick(2)
                      ? choose(query)
                      : choose(words));
      return;
    case 10: // Bytes.
    case 11: {
      if (text.empty())
        return;
      size_t at = pick(text.size());
      switch (pick(3)) {
      case 0:
        text.erase(at, 1 + pick(8));
        break;
      case 1:
        text.insert(at, 1, static_cast<char>(pick(256)));
        break;
      default:
        text[at] = static_cast<char>(text[at] ^ (1u << pick(8)));
      }
      return;
    }
    case 12: // Truncation.
      text.resize(pick(text.size() + 1));
      return;
    default: // Reduction kinds, norms, query words and other words.
      if (StringRef(text).starts_with(kQueryMarker) && pick(2))
        replaceOneOf(text, query);
      else
        replaceOneOf(text, {"p = 1", "p = 2", "sum", "mean", "max", "min"});
      return;
    }
  }

  const std::vector<std::string> &corpus;
  std::mt19937_64 rng;
};

//===----------------------------------------------------------------------===//
// Running an input
//===----------------------------------------------------------------------===//

struct Stage {
  std::string name;
  std::string pipeline; // Empty for the bundle translation.
  uint64_t runs = 0, passed = 0;
};

struct Stats {
  uint64_t inputs = 0, parsed = 0, queries = 0, queriesParsed = 0;
  std::vector<Stage> stages;
};

static std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  kge::registerAllDialects(registry);
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  context->disableMultithreading();
  // Every diagnostic is an expected outcome; keep them quiet.
  context->getDiagEngine().registerHandler(
      [](Diagnostic &) { return success(); });
  return context;
}

static void runInput(MLIRContext &context, const std::string &text,
                     Stats &stats) {
  currentInput = text;
  ::alarm(std::max(1u, (timeoutMs + 999) / 1000));
  ++stats.inputs;
  if (!saveInputs.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(saveInputs + "/input-" +
                                std::to_string(stats.inputs) + ".mlir",
                            ec);
    if (!ec)
      os << text;
  }
  OwningOpRef<ModuleOp> module;
  if (StringRef(text).starts_with(kQueryMarker)) {
    ++stats.queries;
    module = tile::parseQuery(text, &context);
    stats.queriesParsed += static_cast<bool>(module);
  } else {
    ParserConfig config(&context);
    module = parseSourceString<ModuleOp>(text, config, "fuzz-input");
  }
  std::string outcome = "parse error";
  if (module) {
    ++stats.parsed;
    outcome = "parsed";
    // The bundle stage translates what the kge-lower-to-gpu stage made.
    OwningOpRef<ModuleOp> lowered;
    for (Stage &stage : stats.stages) {
      ++stage.runs;
      bool ok;
      if (stage.pipeline.empty()) {
        kge::BundleOptions options;
        options.cubin = false;
        ok = lowered && succeeded(kge::translateToBundle(*lowered, options));
      } else {
        OwningOpRef<ModuleOp> copy(module->clone());
        PassManager pm(&context);
        ok = succeeded(parsePassPipeline(stage.pipeline, pm)) &&
             succeeded(pm.run(*copy));
        if (ok && stage.pipeline == "kge-lower-to-gpu")
          lowered = std::move(copy);
        // A schedule prints and parses back, and lowers as parsed: a
        // printed schedule that does not parse is a crash.
        if (ok && stage.name == "tile schedule") {
          std::string printed;
          llvm::raw_string_ostream os(printed);
          copy->print(os);
          ParserConfig config(&context);
          OwningOpRef<ModuleOp> reparsed =
              parseSourceString<ModuleOp>(printed, config, "fuzz-schedule");
          if (!reparsed) {
            llvm::errs() << "kge-fuzz: a printed schedule does not parse "
                            "back:\n"
                         << printed;
            std::abort();
          }
          // The schedule's own lowering (the later NVVM passes are the
          // other stages').
          PassManager lower(&context);
          ok = succeeded(parsePassPipeline("convert-tile-to-gpu", lower)) &&
               succeeded(lower.run(*reparsed));
        }
      }
      stage.passed += ok;
      outcome += ", " + stage.name + (ok ? " ok" : " diagnosed");
    }
  }
  ::alarm(0);
  if (verbose)
    llvm::errs() << "input " << stats.inputs << ": " << outcome << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  kge::registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "KGE mutation fuzzer\n");

  llvm::sys::fs::create_directories(crashDir.getValue());
  std::string stamp = std::to_string(::getpid());
  crashPath = crashDir + "/crash-" + stamp + ".mlir";
  hangPath = crashDir + "/hang-" + stamp + ".mlir";
  llvm::sys::AddSignalHandler(onCrash, nullptr);
  std::signal(SIGALRM, onAlarm);

  Stats stats;
  // Pipelines of the module pass manager (no builtin.module() anchor: that
  // would nest them on modules inside the module).
  stats.stages = {{"canonicalize", "canonicalize,cse"},
                  {"bvec-fuse", "bvec-fuse"},
                  {"kge-lower-to-cpu", "kge-lower-to-cpu"},
                  {"kge-lower-to-gpu", "kge-lower-to-gpu"},
                  {"kge-lower-to-gpu{negative=t}", "kge-lower-to-gpu{negative=t}"},
                  // Matrix products per edge in bvec's fused kernel (the
                  // default lowers them through tile).
                  {"kge-lower-to-gpu{fuse-matrix-products=1}",
                   "kge-lower-to-gpu{fuse-matrix-products=1}"},
                  // f32 products on tensor cores too (3xTF32).
                  {"tile tf32x3",
                   "convert-tile-to-gpu{matrix-math=tf32x3},kge-lower-to-gpu"},
                  // Schedules written by tile-schedule (or in the input),
                  // printed, parsed back and lowered to gpu as written.
                  {"tile schedule", "tile-schedule{matrix-math=tf32}"},
                  // Score functions against shared negatives (t): tile
                  // tasks, lowered to gpu with f32 product forms on tensor
                  // cores (the factoring of any inner computation).
                  {"bvec shared negatives",
                   "convert-bvec-to-tile{shared-negatives=t},"
                   "convert-tile-to-gpu{matrix-math=tf32}"},
                  // Score functions in linalg/tensor raised to bvec, then
                  // lowered on the CPU path.
                  {"linalg raised to bvec", "bvec-raise-linalg,kge-lower-to-cpu"},
                  // Gradient functions (bvec-differentiate) of score
                  // functions, on the CPU path and the GPU one (there with
                  // matrix gradients as factors, as kge.training derives
                  // them).
                  {"bvec backward to cpu", "bvec-differentiate,kge-lower-to-cpu"},
                  {"bvec backward to gpu",
                   "bvec-differentiate{factor-matrices},kge-lower-to-gpu"},
                  // Graph functions: their layers as tile tasks, on the CPU
                  // path and the GPU one.
                  {"graph to cpu", "convert-graph-to-tile,kge-lower-to-cpu"},
                  {"graph to gpu", "convert-graph-to-tile,kge-lower-to-gpu"},
                  // Their backward functions (graph-differentiate), on both
                  // paths.
                  {"graph backward to cpu",
                   "graph-differentiate,convert-graph-to-tile,kge-lower-to-cpu"},
                  {"graph backward to gpu",
                   "graph-differentiate{keep-forward=0},convert-graph-to-tile,"
                   "kge-lower-to-gpu"},
                  // The schedules (linear-operator fusion, compact
                  // materialization) before the lowering, forward and
                  // backward.
                  {"graph schedules to cpu",
                   "graph-fuse-linear,graph-compact-materialize,"
                   "graph-differentiate,convert-graph-to-tile,kge-lower-to-cpu"},
                  {"graph schedules to gpu",
                   "graph-fuse-linear,graph-compact-materialize,"
                   "convert-graph-to-tile,kge-lower-to-gpu"},
                  // kron functions (kge-lower-to-gpu lowers them to the
                  // bundle with the default layout): the other node
                  // orders and the octile-pair primitive with its dense
                  // path, to the gpu dialect.
                  {"kron octile pairs",
                   "kron-octile-tiling{order=rcm},"
                   "convert-kron-to-gpu{product-rows=false cached-tiles=4 "
                   "dense-threshold=64}"},
                  {"kron natural order",
                   "kron-octile-tiling{order=natural},convert-kron-to-gpu"},
                  {"bundle", ""}};

  auto context = makeContext();
  auto start = std::chrono::steady_clock::now();
  if (!replayFiles.empty()) {
    for (const std::string &path : replayFiles) {
      auto buffer = llvm::MemoryBuffer::getFile(path);
      if (!buffer) {
        llvm::errs() << "kge-fuzz: cannot read " << path << "\n";
        return 1;
      }
      runInput(*context, (*buffer)->getBuffer().str(), stats);
    }
  } else {
    std::vector<std::string> corpus = loadCorpus();
    if (corpus.empty()) {
      llvm::errs() << "kge-fuzz: the corpus is empty (--corpus DIR)\n";
      return 1;
    }
    Mutator mutator(corpus, seed);
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                           start)
          .count();
    };
    auto pipelinesDone = [&] {
      for (const Stage &stage : stats.stages)
        if (stage.runs < minPipelineRuns)
          return false;
      return true;
    };
    if (!iterations && !minPipelineRuns && seconds <= 0) {
      llvm::errs() << "kge-fuzz: give a budget (--iterations, --seconds or "
                      "--min-pipeline-runs)\n";
      return 1;
    }
    while (true) {
      // Counts are reached when both are (absent ones are); time ends all.
      bool enoughInputs = !iterations || stats.inputs >= iterations;
      bool countsGiven = iterations || minPipelineRuns;
      if (countsGiven && enoughInputs && pipelinesDone())
        break;
      if (seconds > 0 && elapsed() >= seconds)
        break;
      // Uniqued types and attributes pile up in a context: renew it.
      if (stats.inputs % 2000 == 1999)
        context = makeContext();
      // Every fourth input is an unmutated seed: pipelines see valid IR.
      runInput(*context,
               stats.inputs % 4 == 0 ? corpus[stats.inputs / 4 % corpus.size()]
                                     : mutator.next(),
               stats);
    }
  }

  double took = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  llvm::outs() << "kge-fuzz: " << stats.inputs << " inputs in "
               << llvm::format("%.0f", took) << " s, " << stats.parsed
               << " parsed and verified\n";
  llvm::outs() << "  GAMUT queries: " << stats.queries << " inputs, "
               << stats.queriesParsed << " parsed\n";
  for (const Stage &stage : stats.stages)
    llvm::outs() << "  " << stage.name << ": " << stage.runs << " runs, "
                 << stage.passed << " succeeded, "
                 << stage.runs - stage.passed << " diagnosed\n";
  llvm::outs() << stats.inputs << " inputs, 0 crashes, 0 hangs\n";
  return 0;
}
