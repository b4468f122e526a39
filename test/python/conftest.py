"""Shared fixtures of KGE's Python tests: where the tools and examples are."""

import os
import pathlib
import sys

import pytest

SOURCE_ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD_ROOT = pathlib.Path(os.environ.get("KGE_BUILD_DIR", SOURCE_ROOT / "build"))
# The build's Python packages (kge with its compiler extension, and the
# runtime's kge_runtime) and the front-end examples.
sys.path.insert(0, str(BUILD_ROOT / "python_packages"))
sys.path.insert(1, str(SOURCE_ROOT / "examples" / "python"))


@pytest.fixture(scope="session", autouse=True)
def _bundle_cache(tmp_path_factory):
    """One bundle cache for the session, outside the user's home: the suite
    never reads bundles a previous build compiled."""
    if "KGE_CACHE_DIR" not in os.environ:
        os.environ["KGE_CACHE_DIR"] = str(tmp_path_factory.mktemp("kge-cache"))
    yield


@pytest.fixture(scope="session")
def tools():
    """Paths of the KGE command-line tools of the build."""
    bin_dir = BUILD_ROOT / "bin"
    paths = {name: bin_dir / name for name in ("kge-opt", "kge-translate", "kge-cpu-runner")}
    for name, path in paths.items():
        if not path.exists():
            pytest.fail(f"{name} is not built at {path}; run scripts/setup.sh")
    return paths


@pytest.fixture(scope="session")
def examples_dir():
    return SOURCE_ROOT / "examples" / "bvec"
