"""`pip install .`: builds KGE's Python package through CMake.

The extensions (kge._compiler, the compiler; kge_runtime, the GPU runtime)
are CMake targets of the project. The build reuses the project's build
directory (KGE_BUILD_DIR, default build/) when it was configured for an
interpreter with the same extension ABI, so that after scripts/setup.sh the
install only copies; otherwise it configures build-pip-<tag>/ with this
interpreter. Needs what scripts/setup.sh installs (LLVM/MLIR 22, CMake,
Ninja, a C++ compiler, nlohmann-json).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
TOOLS = ("kge-opt", "kge-translate", "kge-cpu-runner")


def configured_suffix(build_dir):
    """The extension suffix of the interpreter `build_dir` was configured
    for, or None."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.exists():
        return None
    match = re.search(r"^Python3_EXECUTABLE:[A-Z]+=(.*)$", cache.read_text(), re.M)
    if not match:
        return None
    try:
        return subprocess.run(
            [match.group(1), "-c", "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


class CMakeExtension(Extension):
    def __init__(self, name, built):
        super().__init__(name, sources=[])
        self.built = built  # path below <build>/python_packages, without suffix


class CMakeBuild(build_ext):
    def build_dir(self):
        if os.environ.get("KGE_BUILD_DIR"):
            return pathlib.Path(os.environ["KGE_BUILD_DIR"])
        default = ROOT / "build"
        if configured_suffix(default) == SUFFIX:
            return default
        return ROOT / f"build-pip-{sys.implementation.cache_tag}"

    def run(self):
        build = self.build_dir()
        if not (build / "build.ninja").exists():
            command = ["cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(build),
                       "-DCMAKE_BUILD_TYPE=Release",
                       "-DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir",
                       f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ccache"):
                command += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                            "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
            subprocess.run(command, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "kge-python-package",
                        *TOOLS], check=True)
        for ext in self.extensions:
            source = build / "python_packages" / (ext.built + SUFFIX)
            if not source.exists():
                raise RuntimeError(f"CMake did not build {source} (is pybind11 installed for "
                                   f"{sys.executable}?)")
            target = pathlib.Path(self.get_ext_fullpath(ext.name))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        package = pathlib.Path(self.get_ext_fullpath("kge._compiler")).parent
        # The compiler's build id (bundle-cache keys), written next to it.
        shutil.copyfile(build / "python_packages" / "kge" / "_build_id.py",
                        package / "_build_id.py")
        # The tools, run by the console scripts of kge/_tools.py.
        (package / "_bin").mkdir(exist_ok=True)
        for tool in TOOLS:
            shutil.copy2(build / "bin" / tool, package / "_bin" / tool)


setup(
    ext_modules=[CMakeExtension("kge._compiler", "kge/_compiler"),
                 CMakeExtension("kge_runtime", "kge_runtime")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip-setuptools"}},
)
