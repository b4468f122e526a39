# Writes kge/_build_id.py: the SHA-256 of the compiler extension, which
# names the compiler in bundle-cache keys (kge.cache.compiler_identity) on
# this machine and on machines that only hold cached bundles.
#   cmake -DINPUT=<_compiler.so> -DOUTPUT=<_build_id.py> -P write_build_id.cmake
file(SHA256 "${INPUT}" digest)
file(WRITE "${OUTPUT}.tmp" "BUILD_ID = \"${digest}\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
