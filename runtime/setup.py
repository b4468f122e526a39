"""`pip wheel runtime/`: the runtime (no MLIR) built with CMake.

Configures runtime/ standalone in $KGE_RUNTIME_BUILD_DIR (default
runtime/build-wheel-<tag>) with this interpreter, builds the kge_runtime
module and the C API's library, and puts the library, its header and
kge-bundle-run into the kge_runtime_c package. Needs a C++ compiler, CMake,
Ninja, nlohmann-json and pybind11; nvcc, where present, builds the device
library in (else the runtime reports that it is missing when a bundle needs
it).
"""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


class CMakeBuild(build_ext):
    def run(self):
        build = pathlib.Path(os.environ.get(
            "KGE_RUNTIME_BUILD_DIR", ROOT / f"build-wheel-{sys.implementation.cache_tag}"))
        if not (build / "build.ninja").exists():
            subprocess.run(["cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(build),
                            "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPython3_EXECUTABLE={sys.executable}"], check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "kge_runtime_python",
                        "kge_runtime_c", "kge-bundle-run"], check=True)
        module = build / "python_packages" / ("kge_runtime" + SUFFIX)
        if not module.exists():
            raise RuntimeError(f"CMake did not build {module} (is pybind11 installed for "
                               f"{sys.executable}?)")
        target = pathlib.Path(self.get_ext_fullpath("kge_runtime"))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(module, target)
        files = target.parent / "kge_runtime_c"
        (files / "lib").mkdir(parents=True, exist_ok=True)
        (files / "include" / "kge-c").mkdir(parents=True, exist_ok=True)
        (files / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(build / "libkge_runtime_c.so.1", files / "lib" / "libkge_runtime_c.so.1")
        shutil.copyfile(ROOT / "include" / "kge-c" / "Runtime.h",
                        files / "include" / "kge-c" / "Runtime.h")
        shutil.copy2(build / "kge-bundle-run", files / "bin" / "kge-bundle-run")


setup(
    ext_modules=[Extension("kge_runtime", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(ROOT / "build-wheel-setuptools")}},
)
