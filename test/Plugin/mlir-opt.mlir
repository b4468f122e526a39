// KGE's dialects and pipelines inside Debian's upstream mlir-opt, loaded as
// a dialect plugin and a pass plugin (build/lib/KGEPlugin.so).
// UNSUPPORTED: sanitizers

// The dialects: bvec parses, verifies and prints in the upstream tool.
// RUN: %mlir_opt --load-dialect-plugin=%kge_plugin %s | FileCheck %s --check-prefix=ROUNDTRIP

// The named pipeline gives, through upstream mlir-opt, exactly what kge-opt
// gives, and kge-translate turns it into a bundle.
// RUN: %mlir_opt --load-dialect-plugin=%kge_plugin --load-pass-plugin=%kge_plugin \
// RUN:   --pass-pipeline='builtin.module(kge-lower-to-gpu{negative=t})' %s -o %t.upstream.mlir
// RUN: kge-opt --pass-pipeline='builtin.module(kge-lower-to-gpu{negative=t})' %s -o %t.kge.mlir
// RUN: diff %t.upstream.mlir %t.kge.mlir
// RUN: kge-translate --kge-to-bundle %t.upstream.mlir | FileCheck %s --check-prefix=BUNDLE

// KGE's passes compose with upstream ones in one pipeline.
// RUN: %mlir_opt --load-dialect-plugin=%kge_plugin --load-pass-plugin=%kge_plugin \
// RUN:   --pass-pipeline='builtin.module(kge-lower-to-cpu,canonicalize)' %s | FileCheck %s --check-prefix=CPU

// Raising linalg to bvec in the upstream tool: the same results and remarks
// as kge-opt's (the checks of that test).
// RUN: %mlir_opt --load-dialect-plugin=%kge_plugin --load-pass-plugin=%kge_plugin \
// RUN:   --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(bvec-raise-linalg)' \
// RUN:   %S/../Dialect/BatchedVector/raise-linalg.mlir \
// RUN:   | FileCheck %S/../Dialect/BatchedVector/raise-linalg.mlir

// Without the pass plugin, KGE's pipeline is unknown (and named as such).
// RUN: not %mlir_opt --load-dialect-plugin=%kge_plugin \
// RUN:   --pass-pipeline='builtin.module(kge-lower-to-gpu)' %s 2>&1 | FileCheck %s --check-prefix=NOPASS

// A plugin built for another MLIR is refused by the host, which then does
// not know KGE's dialects: a clear error, no crash.
// RUN: not %mlir_opt --load-dialect-plugin=%kge_plugin_other_mlir %s 2>&1 \
// RUN:   | FileCheck %s --check-prefix=OTHER
// RUN: not %mlir_opt --load-dialect-plugin=%kge_plugin --load-pass-plugin=%kge_plugin_other_mlir \
// RUN:   --pass-pipeline='builtin.module(kge-lower-to-gpu)' %s 2>&1 | FileCheck %s --check-prefix=OTHERPASS

// ROUNDTRIP: bvec.func @distmult(%{{.*}}: !bvec.table<?x?xf32>
// ROUNDTRIP: bvec.mul
// ROUNDTRIP: bvec.vec_mul_vec

// BUNDLE: "format": "kge-bundle"
// BUNDLE: "kind": "negative"

// CPU: llvm.func @distmult
// CPU-NOT: bvec.

// NOPASS: 'kge-lower-to-gpu' does not refer to a registered pass or pass pipeline

// OTHER: Failed to load dialect plugin from '{{.*}}KGEPluginOtherMLIR.so'
// OTHER: Dialect `bvec' not found for custom op 'bvec.func'

// OTHERPASS: Failed to load passes from '{{.*}}KGEPluginOtherMLIR.so'
// OTHERPASS: 'kge-lower-to-gpu' does not refer to a registered pass or pass pipeline

bvec.func @distmult(%Eemb: !bvec.table<?x?xf32>, %Remb: !bvec.table<?x?xf32>, %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
    -> (score: !bvec.scalar<?xf32>) {
  %head = bvec.gather_vec %Eemb[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %tail = bvec.gather_vec %Eemb[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %rel = bvec.gather_vec %Remb[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>
  %hr = bvec.mul %head, %rel : !bvec.vec<?x?xf32>
  %score = bvec.vec_mul_vec %hr, %tail : !bvec.vec<?x?xf32>, !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>
  bvec.return %score : !bvec.scalar<?xf32>
}
