//===- InitAll.h - register everything KGE uses -----------------*- C++ -*-===//
//
// The single registration entry point shared by kge-opt, kge-translate, the
// CPU runner, the C API and the Python module: KGE's dialects and passes and
// the upstream dialects, passes, interfaces and translations its pipelines
// use.
//
//===----------------------------------------------------------------------===//

#ifndef KGE_INITALL_H
#define KGE_INITALL_H

namespace mlir {
class DialectRegistry;
class MLIRContext;

namespace kge {

/// Adds KGE's dialects, the upstream dialects its pipelines produce, and the
/// interfaces those need (ConvertToLLVM, NVVM target, LLVM IR translation).
void registerAllDialects(DialectRegistry &registry);

/// Registers KGE's own passes and named pipelines with the global pass
/// registry (what the pass plugin adds to a host that registers the
/// upstream passes itself). Idempotent.
void registerKGEPasses();

/// Registers KGE's passes, its named pipelines and the upstream passes they
/// use with the global pass registry. Idempotent.
void registerAllPasses();

/// Registers the translations of kge-translate. Idempotent.
void registerAllTranslations();

} // namespace kge
} // namespace mlir

#endif // KGE_INITALL_H
