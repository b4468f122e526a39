//===- KGEPlugin.cpp - KGE as a dialect and pass plugin -------------------===//
//
// One shared object that upstream MLIR tools load with
//
//   mlir-opt --load-dialect-plugin=KGEPlugin.so \
//            --load-pass-plugin=KGEPlugin.so \
//            --pass-pipeline='builtin.module(kge-lower-to-gpu)' in.mlir
//
// The dialect entry point adds KGE's dialects (and the upstream dialects
// and interfaces its pipelines produce and need) to the tool's registry;
// the pass entry point registers KGE's passes and named pipelines. The
// tool refuses a plugin whose API version (the MLIR major version it was
// built for) differs from its own.
//
//===----------------------------------------------------------------------===//

#include "InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

#include "llvm/Config/llvm-config.h"

// A test build declares another API version to show that a host of another
// MLIR refuses the plugin.
#ifndef KGE_PLUGIN_API_VERSION
#define KGE_PLUGIN_API_VERSION MLIR_PLUGIN_API_VERSION
#endif

#define KGE_PLUGIN_VERSION "KGE 0.1.0 for MLIR " LLVM_VERSION_STRING

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {KGE_PLUGIN_API_VERSION, "KGE", KGE_PLUGIN_VERSION,
          [](mlir::DialectRegistry *registry) {
            mlir::kge::registerAllDialects(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  // Only KGE's own passes: the host registers the upstream ones.
  return {KGE_PLUGIN_API_VERSION, "KGE", KGE_PLUGIN_VERSION,
          [] { mlir::kge::registerKGEPasses(); }};
}
