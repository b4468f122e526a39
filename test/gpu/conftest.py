"""The GPU suite: runs on the GPU machine, never in CI.

Needs torch with a CUDA device, the kge_runtime module built from runtime/
(on PYTHONPATH) and bundles compiled by test/gpu/build_bundles.py
(KGE_GPU_BUNDLES, default .carry/bundles). scripts/gpu-test.sh does all of it.
"""

import os
import pathlib

import pytest

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUNDLES = pathlib.Path(os.environ.get("KGE_GPU_BUNDLES", ROOT / ".carry" / "bundles"))


def pytest_collection_modifyitems(config, items):
    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="no CUDA device")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def rt():
    import kge_runtime
    return kge_runtime


_programs = {}


@pytest.fixture(scope="session")
def program(rt):
    """program(example, mode, variant) -> a loaded kge_runtime.Program."""
    def load(example, mode, variant):
        key = (example, mode, variant)
        if key not in _programs:
            path = BUNDLES / f"{example}.{mode}.{variant}.kgebundle"
            if not path.exists():
                pytest.fail(f"missing bundle {path}; run test/gpu/build_bundles.py")
            _programs[key] = rt.Program(path.read_text())
        return _programs[key]
    return load
