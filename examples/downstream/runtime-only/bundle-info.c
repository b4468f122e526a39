/*===- bundle-info.c - a bundle's signature, read without MLIR ------------===*\
|*                                                                            *|
|*   bundle-info FILE.bundle                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "kge-c/Runtime.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: bundle-info FILE.bundle\n");
    return 2;
  }
  if (kgertCheckApiVersion(KGERT_API_VERSION) != KGERT_SUCCESS) {
    fprintf(stderr, "bundle-info: %s\n", kgertGetLastError());
    return 1;
  }
  FILE *file = fopen(argv[1], "rb");
  if (!file) {
    fprintf(stderr, "bundle-info: cannot read %s\n", argv[1]);
    return 1;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  char *text = malloc(size > 0 ? size : 1);
  size_t length = fread(text, 1, size, file);
  fclose(file);

  kgertManifest manifest = NULL;
  if (kgertManifestParse(text, length, &manifest) != KGERT_SUCCESS) {
    fprintf(stderr, "bundle-info: %s\n", kgertGetLastError());
    free(text);
    return 1;
  }
  printf("%s (%s), %zu arguments\n", kgertManifestGetFunctionName(manifest),
         kgertManifestGetChip(manifest), kgertManifestGetNumArguments(manifest));
  kgertManifestDestroy(manifest);
  free(text);
  return 0;
}
