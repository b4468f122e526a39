"""The kge package as users get it: `pip install .` (scripts/setup.sh does
it) puts kge, its compiler extension and the runtime module into the
project environment; the README's example runs from there."""

import os
import subprocess
import sys

from conftest import SOURCE_ROOT


def clean_run(*args):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KGE_BUILD_DIR")}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd="/")


def test_installed_package_imports_outside_the_source_tree():
    result = clean_run("-c", "import kge, kge.ir, kge.runtime, kge_runtime; "
                             "print(kge.__file__); print(kge.ir.Context)")
    assert result.returncode == 0, result.stderr
    assert "site-packages/kge/__init__.py" in result.stdout


def test_readme_example_runs():
    example = SOURCE_ROOT / "examples" / "python" / "quickstart.py"
    assert example.read_text() in (SOURCE_ROOT / "README.md").read_text(), (
        "README.md must show examples/python/quickstart.py verbatim")
    result = clean_run(str(example))
    assert result.returncode == 0, result.stderr
    assert "bvec.func @transe" in result.stdout and "kge.Bundle transe" in result.stdout


def test_runtime_parts_import_without_the_compiler(tmp_path):
    """On a GPU machine only python/ and the runtime module exist: kge must
    import, and compiling must say what is missing."""
    package = tmp_path / "kge"
    package.mkdir()
    for source in (SOURCE_ROOT / "python" / "kge").glob("*.py"):
        (package / source.name).write_text(source.read_text())
    code = ("import kge\n"
            "try:\n"
            "    import kge.ir\n"
            "except kge.CompilerUnavailableError as e:\n"
            "    print('unavailable:', e)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                            env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "unavailable: the KGE compiler extension (kge._compiler) is not available" in result.stdout
