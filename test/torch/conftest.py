"""KGE's tests that need PyTorch, run on the CPU: the training engine
(kge.training, kge.out_of_core) in plain PyTorch on the CPU, which takes
the same steps as on the GPU with KGE's kernels swapped for PyTorch's.

PyPI ships PyTorch for Linux only with CUDA; these tests run under Debian's
Python with Debian's CPU build (python3-torch, which scripts/setup.sh
installs), importing the package from the build (with its compiler
extension) or, without a build, from the source tree."""

import os
import pathlib
import sys

SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD_ROOT = pathlib.Path(os.environ.get("KGE_BUILD_DIR", SOURCE_ROOT / "build"))
sys.path.insert(0, str(SOURCE_ROOT / "python"))
# The build's copy of the package carries the compiler extension, which the
# torch.compile backend's tests need; it is the same Python otherwise.
if (BUILD_ROOT / "python_packages" / "kge").is_dir():
    sys.path.insert(0, str(BUILD_ROOT / "python_packages"))
sys.path.insert(1, str(SOURCE_ROOT / "examples" / "python"))
