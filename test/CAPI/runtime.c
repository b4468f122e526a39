/*===- runtime.c - the runtime's C API, used from C -----------------------===*\
|*                                                                            *|
|* Reads a bundle through libkge_runtime_c (no MLIR), inspects its            *|
|* signature, computes result shapes, and answers every bad input (a          *|
|* corrupt bundle, NULL handles, wrong arrays, another API version) with a    *|
|* status and a message. On a machine with a GPU the GPU suite launches       *|
|* bundles through this API (test/gpu/test_runtime_capi.py).                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

// RUN: kge-opt %examples/bvec/distmult.mlir -kge-lower-to-gpu | kge-translate --kge-to-bundle -o %t.bundle
// RUN: kge-capi-runtime-test %t.bundle 2>&1 | FileCheck %s

#include "kge-c/Runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *readFile(const char *path, size_t *length) {
  FILE *file = fopen(path, "rb");
  if (!file)
    return NULL;
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *data = malloc(size + 1);
  *length = fread(data, 1, size, file);
  data[*length] = 0;
  fclose(file);
  return data;
}

static void report(const char *label, kgertStatus status) {
  printf("%s: status %d: %s\n", label, (int)status, kgertGetLastError());
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: kge-capi-runtime-test BUNDLE\n");
    return 2;
  }
  size_t length = 0;
  char *text = readFile(argv[1], &length);
  if (!text) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }

  // CHECK: api version 1, check 0
  printf("api version %d, check %d\n", kgertGetApiVersion(),
         (int)kgertCheckApiVersion(KGERT_API_VERSION));
  // CHECK: other version: status 5: the caller was built for version 7 of the KGE runtime C API, but the loaded library implements version 1
  report("other version", kgertCheckApiVersion(7));

  kgertManifest manifest = NULL;
  kgertStatus status = kgertManifestParse(text, length, &manifest);
  // CHECK: parsed: status 0:
  report("parsed", status);
  // CHECK-NEXT: function distmult on sm_90: 6 parameters, 5 arguments
  printf("function %s on %s: %zu parameters, %zu arguments\n",
         kgertManifestGetFunctionName(manifest), kgertManifestGetChip(manifest),
         kgertManifestGetNumParams(manifest), kgertManifestGetNumArguments(manifest));
  const char *roles[] = {"table", "indices", "result", "output"};
  for (size_t i = 0; i < kgertManifestGetNumParams(manifest); ++i) {
    kgertParamInfo info;
    kgertManifestGetParam(manifest, i, &info);
    printf("  %s %s %s rank %d\n", roles[info.role], info.name,
           kgertDTypeName(info.dtype), info.rank);
  }
  // CHECK-NEXT: table Eemb f32 rank 2
  // CHECK-NEXT: table Remb f32 rank 2
  // CHECK-NEXT: indices h i64 rank 1
  // CHECK-NEXT: indices r i64 rank 1
  // CHECK-NEXT: indices t i64 rank 1
  // CHECK-NEXT: result score f32 rank 1
  kgertParamInfo info;
  // CHECK: param 6: status 2: parameter 6 of 'distmult': it has 6 parameters
  report("param 6", kgertManifestGetParam(manifest, 6, &info));

  int64_t ent[2] = {14951, 128}, rel[2] = {1345, 128}, idx[1] = {1000};
  kgertArray args[5] = {{0, KGERT_F32, 2, ent, NULL, -1},
                        {0, KGERT_F32, 2, rel, NULL, -1},
                        {0, KGERT_I64, 1, idx, NULL, -1},
                        {0, KGERT_I64, 1, idx, NULL, -1},
                        {0, KGERT_I64, 1, idx, NULL, -1}};
  int64_t shape[2] = {0, 0};
  int32_t rank = -1;
  status = kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 2, &rank);
  // CHECK: result shape: status 0, rank 1, [1000]
  printf("result shape: status %d, rank %d, [%ld]\n", (int)status, rank, (long)shape[0]);

  // Wrong arrays: each named in the message.
  args[3].dtype = KGERT_F32;
  // CHECK: float indices: status 2: {{.*}}'r'{{.*}}
  report("float indices",
         kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 2, &rank));
  args[3].dtype = KGERT_I64;
  int64_t shortIdx[1] = {999};
  args[4].shape = shortIdx;
  // CHECK: batch mismatch: status 2: {{.*}}'t'{{.*}}
  report("batch mismatch",
         kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 2, &rank));
  args[4].shape = idx;
  // CHECK: four arguments: status 2:
  report("four arguments",
         kgertManifestGetResultShape(manifest, args, 4, -1, 0, shape, 2, &rank));
  args[0].dtype = 42;
  // CHECK: bad dtype: status 2: argument 0: unknown dtype code 42
  report("bad dtype",
         kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 2, &rank));
  args[0].dtype = KGERT_F32;
  args[0].rank = -3;
  // CHECK: bad rank: status 2: argument 0: rank -3 is outside 0..8
  report("bad rank",
         kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 2, &rank));
  args[0].rank = 2;
  // CHECK: no room: status 2: the shape of result 'score' has 1 sizes but room was given for 0
  report("no room",
         kgertManifestGetResultShape(manifest, args, 5, -1, 0, shape, 0, &rank));
  // CHECK: second result: status 2: result 1 of 'distmult': it has 1 results
  report("second result",
         kgertManifestGetResultShape(manifest, args, 5, -1, 1, shape, 2, &rank));
  // CHECK: null arguments: status 2: the argument list is NULL but 5 arguments were announced
  report("null arguments",
         kgertManifestGetResultShape(manifest, NULL, 5, -1, 0, shape, 2, &rank));
  kgertManifestDestroy(manifest);

  // Corrupt bundles.
  kgertManifest bad = NULL;
  // CHECK: truncated: status 1: {{.+}}
  report("truncated", kgertManifestParse(text, length / 2, &bad));
  // CHECK-NEXT: handle stays NULL: 1
  printf("handle stays NULL: %d\n", bad == NULL);
  const char *other = "{\"format\": \"kge-bundle\", \"version\": 99}";
  // CHECK: other format version: status 1: {{.*}}99{{.*}}
  report("other format version", kgertManifestParse(other, strlen(other), &bad));
  // CHECK: null text: status 2: kgertManifestParse: text is NULL
  report("null text", kgertManifestParse(NULL, 0, &bad));
  // CHECK: null program: status 2: kgertProgramCall: program is NULL
  report("null program", kgertProgramCall(NULL, NULL, 0, NULL, 0, NULL));
  // CHECK: dtype names: f32 i64 (null)
  const char *none = kgertDTypeName(9);
  printf("dtype names: %s %s %s\n", kgertDTypeName(KGERT_F32), kgertDTypeName(KGERT_I64),
         none ? none : "(null)");

  // Loading needs a GPU; without one (CI) the driver's absence is a status.
  kgertProgram program = NULL;
  status = kgertProgramLoad(text, length, 0, &program);
  int devices = kgertGetDeviceCount();
  // CHECK: load: as expected
  printf("load: %s\n", (devices == 0 && status == KGERT_ERROR_CUDA && !program) ||
                               (devices > 0 && status == KGERT_SUCCESS && program)
                           ? "as expected"
                           : kgertGetLastError());
  kgertProgramDestroy(program);
  free(text);
  // CHECK: done
  printf("done\n");
  return 0;
}
