# -*- Python -*-
# lit configuration of KGE's CPU test suite (lit + FileCheck).

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "KGE"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".c"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kge_obj_root, "test")
# GPU tests run on the GPU machine through their own driver; fuzz/ holds
# inputs that Tools/kge-fuzz replays; Python tests
# run under pytest; unit tests under ctest.
config.excludes = ["gpu", "python", "torch", "unittests", "fuzz", "lit.cfg.py", "lit.site.cfg.py",
                   "CMakeLists.txt", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%kge_src_root", config.kge_src_root))
config.substitutions.append(("%kge_obj_root", config.kge_obj_root))
config.substitutions.append(("%examples", os.path.join(config.kge_src_root, "examples")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
if config.kge_sanitizers:
    # ASan + UBSan build (KGE_ENABLE_SANITIZERS). LLVM's headers poison the
    # slabs of their allocators in KGE's instrumented code while the
    # uninstrumented libMLIR hands out memory from them without unpoisoning:
    # manual poisoning must be off, everything else stays on.
    config.environment["ASAN_OPTIONS"] = "allow_user_poisoning=0:detect_leaks=0:abort_on_error=1"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"
    # Upstream tools are not instrumented: they cannot load KGE's plugin.
    config.available_features.add("sanitizers")
llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line are found through PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.kge_tools_dir, append_path=True)

tool_dirs = [config.kge_tools_dir, config.llvm_tools_dir]
tools = ["kge-opt", "kge-translate", "kge-cpu-runner", "kge-fuzz",
         "kge-capi-compiler-test", "kge-capi-runtime-test"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# ptxas assembles emitted PTX when the CUDA toolkit is present.
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))

# KGE's dialect and pass plugin for upstream mlir-opt, and a build of it that
# declares another MLIR's plugin API.
config.substitutions.append(("%mlir_opt", os.path.join(config.llvm_tools_dir, "mlir-opt")))
config.substitutions.append(("%kge_plugin_other_mlir",
                             os.path.join(config.kge_obj_root, "lib", "KGEPluginOtherMLIR.so")))
config.substitutions.append(("%kge_plugin", os.path.join(config.kge_obj_root, "lib", "KGEPlugin.so")))
