"""KGE's tests that need PyTorch, run on the CPU: the training engine
(kge.training, kge.out_of_core) in plain PyTorch on the CPU, which takes
the same steps as on the GPU with KGE's kernels swapped for PyTorch's.

PyPI ships PyTorch for Linux only with CUDA; these tests run under Debian's
Python with Debian's CPU build (python3-torch, which scripts/setup.sh
installs), importing the pure-Python package from the source tree."""

import pathlib
import sys

SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE_ROOT / "python"))
