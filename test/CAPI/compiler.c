/*===- compiler.c - KGE's compiler C API, used from C ---------------------===*\
|*                                                                            *|
|* Builds and inspects KGE types and attributes, parses a score function,     *|
|* runs KGE's pipelines, compiles the function to a bundle in memory and      *|
|* reads that bundle back through the runtime's C API; every bad input is     *|
|* answered by a failure and a diagnostic.                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

// RUN: kge-capi-compiler-test 2>&1 | FileCheck %s

#include "kge-c/Compiler.h"
#include "kge-c/Dialects.h"
#include "kge-c/Runtime.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void printToStdout(MlirStringRef text, void *userData) {
  (void)userData;
  fwrite(text.data, 1, text.length, stdout);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  printf("diagnostic: ");
  mlirDiagnosticPrint(diagnostic, printToStdout, NULL);
  printf("\n");
  return mlirLogicalResultSuccess();
}

static void printType(const char *label, MlirType type) {
  printf("%s: ", label);
  if (mlirTypeIsNull(type))
    printf("<null>");
  else
    mlirTypePrint(type, printToStdout, NULL);
  printf("\n");
}

typedef struct {
  char *data;
  size_t length;
} Buffer;

static void appendToBuffer(MlirStringRef text, void *userData) {
  Buffer *buffer = (Buffer *)userData;
  buffer->data = realloc(buffer->data, buffer->length + text.length + 1);
  memcpy(buffer->data + buffer->length, text.data, text.length);
  buffer->length += text.length;
  buffer->data[buffer->length] = 0;
}

static const char *kTransE =
    "module {\n"
    "bvec.func @transe(%E: !bvec.table<?x?xf32>, %R: !bvec.table<?x?xf32>,\n"
    "                  %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,\n"
    "                  %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) {\n"
    "  %a = bvec.gather_vec %E[%h] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>\n"
    "  %b = bvec.gather_vec %E[%t] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>\n"
    "  %c = bvec.gather_vec %R[%r] : !bvec.table<?x?xf32>, !bvec.indices<?xi64> -> !bvec.vec<?x?xf32>\n"
    "  %d = bvec.sub %a, %b : !bvec.vec<?x?xf32>\n"
    "  %e = bvec.add %d, %c : !bvec.vec<?x?xf32>\n"
    "  %s = bvec.norm %e, p = 2 : !bvec.vec<?x?xf32> -> !bvec.scalar<?xf32>\n"
    "  bvec.return %s : !bvec.scalar<?xf32>\n"
    "}\n"
    "}\n";

static void testVersions(void) {
  // CHECK-LABEL: versions
  printf("versions\n");
  // CHECK: header matches: 1
  printf("header matches: %d\n",
         mlirLogicalResultIsSuccess(
             kgeCheckCAPIVersion(KGE_CAPI_VERSION, printToStdout, NULL)));
  // CHECK: built for version 2 of the KGE C API, but the loaded library implements version 1
  MlirLogicalResult r = kgeCheckCAPIVersion(KGE_CAPI_VERSION + 1, printToStdout, NULL);
  printf("\nnewer header fails: %d\n", mlirLogicalResultIsFailure(r));
  // CHECK: newer header fails: 1
  // CHECK: MLIR version: 22.1
  MlirStringRef version = kgeGetMLIRVersion();
  printf("MLIR version: %.*s\n", (int)version.length, version.data);
}

static void testTypes(MlirContext ctx) {
  // CHECK-LABEL: types
  printf("types\n");
  MlirDialectHandle bvec = mlirGetDialectHandle__bvec__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(bvec);
  // CHECK: namespaces: bvec tile graph kron
  printf("namespaces: %.*s", (int)ns.length, ns.data);
  MlirDialectHandle others[3] = {mlirGetDialectHandle__tile__(),
                                 mlirGetDialectHandle__graph__(),
                                 mlirGetDialectHandle__kron__()};
  for (int i = 0; i < 3; ++i) {
    ns = mlirDialectHandleGetNamespace(others[i]);
    printf(" %.*s", (int)ns.length, ns.data);
  }
  printf("\n");

  MlirType f32 = mlirF32TypeGet(ctx);
  int64_t dyn = kgeGetDynamicSize();
  int64_t tableShape[2] = {dyn, 128};
  MlirType table = kgeBvecTableTypeGet(ctx, 2, tableShape, f32);
  // CHECK: table: !bvec.table<?x128xf32>
  printType("table", table);
  // CHECK: table is a table 1, rank 2, dims ? 128, batched 0
  printf("table is a table %d, rank %ld, dims %s %ld, batched %d\n",
         kgeTypeIsABvecTable(table), (long)kgeBvecTableTypeGetRank(table),
         kgeBvecTableTypeGetDimSize(table, 0) == dyn ? "?" : "static",
         (long)kgeBvecTableTypeGetDimSize(table, 1), kgeTypeIsABvecBatched(table));

  MlirType vec = kgeBvecVecTypeGet(ctx, dyn, 64, f32);
  // CHECK: vec: !bvec.vec<?x64xf32>
  printType("vec", vec);
  // CHECK: vec length 64, batched 1, element f32 1
  printf("vec length %ld, batched %d, element f32 %d\n",
         (long)kgeBvecVecTypeGetLength(vec), kgeTypeIsABvecBatched(vec),
         mlirTypeEqual(kgeTypeGetElementType(vec), f32));
  MlirType mat = kgeBvecMatTypeGet(ctx, 4096, 32, 16, f32);
  // CHECK: mat: !bvec.mat<4096x32x16xf32>
  printType("mat", mat);
  // CHECK: mat 32x16, batch 4096
  printf("mat %ldx%ld, batch %ld\n", (long)kgeBvecMatTypeGetRows(mat),
         (long)kgeBvecMatTypeGetCols(mat), (long)kgeBvecBatchedTypeGetBatchSize(mat));
  // CHECK: indices: !bvec.indices<?xi32>
  printType("indices", kgeBvecIndicesTypeGet(ctx, dyn, mlirIntegerTypeGet(ctx, 32)));
  // CHECK: scalar: !bvec.scalar<?xf64>
  printType("scalar", kgeBvecScalarTypeGet(ctx, dyn, mlirF64TypeGet(ctx)));

  int64_t tileShape[2] = {128, 16};
  MlirType tile = kgeTileTypeGet(ctx, 2, tileShape, f32);
  // CHECK: tile: !tile.tile<128x16xf32>
  printType("tile", tile);
  // CHECK: tile rank 2, 128x16, is a table 0
  printf("tile rank %ld, %ldx%ld, is a table %d\n", (long)kgeTileTypeGetRank(tile),
         (long)kgeTileTypeGetDimSize(tile, 0), (long)kgeTileTypeGetDimSize(tile, 1),
         kgeTypeIsABvecTable(tile));

  // Invalid parameters: a diagnostic and a null type, never an abort.
  int64_t rank1[1] = {10};
  // CHECK: diagnostic: {{.*}}rank
  // CHECK-NEXT: rank-1 table: <null>
  printType("rank-1 table", kgeBvecTableTypeGet(ctx, 1, rank1, f32));
  // CHECK: diagnostic:
  // CHECK-NEXT: integer vec: <null>
  printType("integer vec", kgeBvecVecTypeGet(ctx, dyn, 8, mlirIntegerTypeGet(ctx, 32)));
  // CHECK: diagnostic: element type is null
  // CHECK-NEXT: null element: <null>
  printType("null element", kgeBvecScalarTypeGet(ctx, dyn, (MlirType){NULL}));
  int64_t badTile[2] = {0, 16};
  // CHECK: diagnostic:
  // CHECK-NEXT: empty tile: <null>
  printType("empty tile", kgeTileTypeGet(ctx, 2, badTile, f32));
  // CHECK: diagnostic: shape of rank 2 is missing or negative
  // CHECK-NEXT: missing shape: <null>
  printType("missing shape", kgeTileTypeGet(ctx, 2, NULL, f32));

  // CHECK: reduction: 1 max
  MlirAttribute kind = kgeBvecReductionKindAttrGet(ctx, mlirStringRefCreateFromCString("max"));
  MlirStringRef value = kgeBvecReductionKindAttrGetValue(kind);
  printf("reduction: %d %.*s\n", kgeAttributeIsABvecReductionKind(kind),
         (int)value.length, value.data);
  // CHECK: diagnostic: unknown reduction kind 'median' (expected sum, mean, max or min)
  // CHECK-NEXT: median is null: 1
  kind = kgeBvecReductionKindAttrGet(ctx, mlirStringRefCreateFromCString("median"));
  printf("median is null: %d\n", mlirAttributeIsNull(kind));
}

static void testCompile(MlirContext ctx) {
  // CHECK-LABEL: compile
  printf("compile\n");
  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kTransE));
  // CHECK: parsed: 1
  printf("parsed: %d\n", !mlirModuleIsNull(module));
  if (mlirModuleIsNull(module))
    exit(1);
  MlirOperation op = mlirModuleGetOperation(module);

  // CHECK: diagnostic: invalid pass pipeline 'builtin.module(no-such-pass)'
  // CHECK: unknown pipeline fails: 1
  MlirLogicalResult r = kgeRunPassPipeline(
      op, mlirStringRefCreateFromCString("builtin.module(no-such-pass)"));
  printf("unknown pipeline fails: %d\n", mlirLogicalResultIsFailure(r));
  // CHECK: null module fails: 1
  printf("null module fails: %d\n",
         mlirLogicalResultIsFailure(kgeLowerToCPU((MlirModule){NULL})));

  kgeBundleOptions options = kgeBundleOptionsGetDefault();
  // CHECK: default chip: sm_90
  printf("default chip: %.*s\n", (int)options.chip.length, options.chip.data);
  options.cubin = false;
  Buffer bundle = {NULL, 0};
  r = kgeCompileToBundle(module, mlirStringRefCreate(NULL, 0), &options,
                         appendToBuffer, &bundle);
  // CHECK: compiled: 1, a bundle: 1
  printf("compiled: %d, a bundle: %d\n", mlirLogicalResultIsSuccess(r),
         bundle.data && strstr(bundle.data, "\"kge-bundle\"") != NULL);
  // The source module is left as it was.
  // CHECK: still bvec: 1
  printf("still bvec: %d\n",
         mlirOperationVerify(op) &&
             strcmp(mlirIdentifierStr(mlirOperationGetName(
                        mlirBlockGetFirstOperation(mlirModuleGetBody(module))))
                        .data,
                    "bvec.func") == 0);

  options.optLevel = 7;
  Buffer unused = {NULL, 0};
  // CHECK: diagnostic: bundle option optLevel must be 0 to 3, got 7
  // CHECK-NEXT: bad option fails: 1
  r = kgeCompileToBundle(module, mlirStringRefCreate(NULL, 0), &options,
                         appendToBuffer, &unused);
  printf("bad option fails: %d\n", mlirLogicalResultIsFailure(r));
  // A module that was not lowered has no kernel to translate.
  options.optLevel = 3;
  // CHECK: diagnostic:
  // CHECK: unlowered fails: 1
  r = kgeTranslateToBundle(module, &options, appendToBuffer, &unused);
  printf("unlowered fails: %d\n", mlirLogicalResultIsFailure(r));

  // The bundle, read through the runtime's C API (which links no MLIR).
  // CHECK: runtime version ok: 1
  printf("runtime version ok: %d\n", kgertCheckApiVersion(KGERT_API_VERSION) == KGERT_SUCCESS);
  kgertManifest manifest = NULL;
  kgertStatus status = kgertManifestParse(bundle.data, bundle.length, &manifest);
  // CHECK: manifest: 0 transe, 6 params, 5 arguments
  printf("manifest: %d %s, %zu params, %zu arguments\n", (int)status,
         kgertManifestGetFunctionName(manifest), kgertManifestGetNumParams(manifest),
         kgertManifestGetNumArguments(manifest));
  // CHECK: param 2: h indices i64 rank 1
  kgertParamInfo info;
  kgertManifestGetParam(manifest, 2, &info);
  printf("param 2: %s %s %s rank %d\n", info.name,
         info.role == KGERT_INDICES ? "indices" : "other", kgertDTypeName(info.dtype),
         info.rank);
  int64_t entShape[2] = {1000, 64}, relShape[2] = {20, 64}, idxShape[1] = {4096};
  kgertArray args[5] = {
      {0, KGERT_F32, 2, entShape, NULL, -1}, {0, KGERT_F32, 2, relShape, NULL, -1},
      {0, KGERT_I64, 1, idxShape, NULL, -1}, {0, KGERT_I64, 1, idxShape, NULL, -1},
      {0, KGERT_I64, 1, idxShape, NULL, -1}};
  int64_t shape[4];
  int32_t rank = 0;
  status = kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 4, &rank);
  // CHECK: result shape: 0 rank 1 [4096]
  printf("result shape: %d rank %d [%ld]\n", (int)status, rank, (long)shape[0]);
  int64_t otherWidth[2] = {20, 32};
  args[1].shape = otherWidth;
  status = kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 4, &rank);
  // CHECK: mismatched width: 2 table 'R' has size 32 in dimension 1 but 'D_E' is 64 (set by 'E')
  printf("mismatched width: %d %s\n", (int)status, kgertGetLastError());
  kgertManifestDestroy(manifest);

  // CHECK: lowered to CPU: 1
  r = kgeLowerToCPU(module);
  printf("lowered to CPU: %d\n", mlirLogicalResultIsSuccess(r));
  mlirModuleDestroy(module);
  free(bundle.data);
  free(unused.data);
}

int main(void) {
  testVersions();
  MlirContext ctx = mlirContextCreateWithThreading(false);
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  kgeRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(ctx, printDiagnostic, NULL, NULL);
  testTypes(ctx);
  testCompile(ctx);
  mlirContextDestroy(ctx);
  // CHECK: done
  printf("done\n");
  return 0;
}
