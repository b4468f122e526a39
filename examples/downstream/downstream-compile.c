/*===- downstream-compile.c - compile a .mlir file through KGE's C API ----===*\
|*                                                                            *|
|*   downstream-compile IN.mlir OUT.bundle [PIPELINE]                         *|
|*                                                                            *|
|* Parses IN.mlir, compiles it to a kernel bundle in memory (PIPELINE, or     *|
|* kge-lower-to-gpu), writes the bundle and prints its signature as the       *|
|* runtime's C API reads it. Diagnostics go to stderr; exit status 1 on any   *|
|* failure.                                                                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "kge-c/Compiler.h"
#include "kge-c/Runtime.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *data;
  size_t length;
} Text;

static void append(MlirStringRef piece, void *userData) {
  Text *text = (Text *)userData;
  text->data = realloc(text->data, text->length + piece.length + 1);
  memcpy(text->data + text->length, piece.data, piece.length);
  text->length += piece.length;
  text->data[text->length] = 0;
}

static void toStderr(MlirStringRef piece, void *userData) {
  (void)userData;
  fwrite(piece.data, 1, piece.length, stderr);
}

static MlirLogicalResult onDiagnostic(MlirDiagnostic diagnostic, void *userData) {
  (void)userData;
  fprintf(stderr, "downstream-compile: ");
  mlirDiagnosticPrint(diagnostic, toStderr, NULL);
  fprintf(stderr, "\n");
  return mlirLogicalResultSuccess();
}

static int readFile(const char *path, Text *text) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return 0;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, file)) > 0)
    append(mlirStringRefCreate(buffer, n), text);
  fclose(file);
  return text->data != NULL;
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: downstream-compile IN.mlir OUT.bundle [PIPELINE]\n");
    return 2;
  }
  if (mlirLogicalResultIsFailure(kgeCheckCAPIVersion(KGE_CAPI_VERSION, toStderr, NULL)) ||
      kgertCheckApiVersion(KGERT_API_VERSION) != KGERT_SUCCESS) {
    fprintf(stderr, "\ndownstream-compile: %s\n", kgertGetLastError());
    return 1;
  }
  Text source = {NULL, 0};
  if (!readFile(argv[1], &source)) {
    fprintf(stderr, "downstream-compile: cannot read %s\n", argv[1]);
    return 1;
  }

  MlirContext ctx = mlirContextCreate();
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  kgeRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(ctx, onDiagnostic, NULL, NULL);

  int status = 1;
  MlirModule module = mlirModuleCreateParse(ctx, mlirStringRefCreate(source.data, source.length));
  Text bundle = {NULL, 0};
  MlirStringRef pipeline = argc == 4 ? mlirStringRefCreateFromCString(argv[3])
                                     : mlirStringRefCreate(NULL, 0);
  if (!mlirModuleIsNull(module) &&
      mlirLogicalResultIsSuccess(kgeCompileToBundle(module, pipeline, NULL, append, &bundle))) {
    FILE *out = fopen(argv[2], "wb");
    if (out && fwrite(bundle.data, 1, bundle.length, out) == bundle.length) {
      kgertManifest manifest = NULL;
      if (kgertManifestParse(bundle.data, bundle.length, &manifest) == KGERT_SUCCESS) {
        printf("%s for %s:", kgertManifestGetFunctionName(manifest),
               kgertManifestGetChip(manifest));
        for (size_t i = 0; i < kgertManifestGetNumParams(manifest); ++i) {
          kgertParamInfo info;
          kgertManifestGetParam(manifest, i, &info);
          printf(" %s:%s%s", info.name, kgertDTypeName(info.dtype),
                 info.role == KGERT_RESULT ? "(result)" : "");
        }
        printf("\n");
        kgertManifestDestroy(manifest);
        status = 0;
      } else {
        fprintf(stderr, "downstream-compile: %s\n", kgertGetLastError());
      }
    } else {
      fprintf(stderr, "downstream-compile: cannot write %s\n", argv[2]);
    }
    if (out)
      fclose(out);
  }
  if (!mlirModuleIsNull(module))
    mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  free(source.data);
  free(bundle.data);
  return status;
}
