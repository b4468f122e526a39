"""The kge package as users get it: `pip install .` (scripts/setup.sh does
it) puts kge, its compiler extension and the runtime module into the
project environment; the README's example runs from there. The wheels:
kge's installs into a fresh environment and runs the quickstart and the
tools; the runtime's is small and links no MLIR."""

import os
import subprocess
import sys
import textwrap

from conftest import BUILD_ROOT, SOURCE_ROOT


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


def without_sanitizer_runtime(env):
    """`env` without the ASan runtime the sanitizer suite preloads: the
    runtime wheel's build runs nvcc, which crashes under it, and builds
    nothing instrumented."""
    return {k: v for k, v in env.items() if k != "LD_PRELOAD"}


def wheel(tmp_path, source, env=None):
    """Builds the wheel of `source` into tmp_path/wheels; returns its path."""
    out = tmp_path / "wheels"
    base = without_sanitizer_runtime(os.environ) if source.name == "runtime" else os.environ
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                             "--no-deps", "--disable-pip-version-check", "-w", str(out),
                             str(source)], capture_output=True, text=True,
                            env={**base, **(env or {})})
    assert result.returncode == 0, result.stderr
    name = "kge_runtime-" if source.name == "runtime" else "kge-"
    (path,) = [p for p in out.glob("*.whl") if p.name.startswith(name)]
    return path


def fresh_environment(path):
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def test_the_wheel_installs_into_a_fresh_environment_and_runs_the_quickstart(tmp_path):
    built = wheel(tmp_path, SOURCE_ROOT)
    bin_dir = fresh_environment(tmp_path / "env")
    result = subprocess.run([str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check",
                             str(built)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KGE_BUILD_DIR")}
    quickstart = subprocess.run([str(bin_dir / "python"),
                                 str(SOURCE_ROOT / "examples" / "python" / "quickstart.py")],
                                capture_output=True, text=True, env=env, cwd="/")
    assert quickstart.returncode == 0, quickstart.stderr
    assert "kge.Bundle transe" in quickstart.stdout
    # The tools, as console scripts.
    lowered = subprocess.run(
        f"{bin_dir}/kge-opt -kge-lower-to-gpu {SOURCE_ROOT}/examples/bvec/distmult.mlir | "
        f"{bin_dir}/kge-translate --kge-to-bundle", shell=True, capture_output=True, text=True,
        env=env, cwd="/")
    assert lowered.returncode == 0, lowered.stderr
    assert '"format": "kge-bundle"' in lowered.stdout
    # torch.compile finds backend="kge" through the package's entry point.
    entry = subprocess.run(
        [str(bin_dir / "python"), "-c",
         "from importlib.metadata import entry_points; "
         "print([e.value for e in entry_points(group='torch_dynamo_backends')])"],
        capture_output=True, text=True, env=env, cwd="/")
    assert "kge.torch_backend:kge_backend" in entry.stdout, entry.stderr


def test_the_runtime_wheel_is_small_and_needs_no_mlir(tmp_path):
    built = wheel(tmp_path, SOURCE_ROOT / "runtime",
                  {"KGE_RUNTIME_BUILD_DIR": str(tmp_path / "runtime-build")})
    assert built.stat().st_size < 4 << 20
    bin_dir = fresh_environment(tmp_path / "env")
    subprocess.run([str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check",
                    "--no-deps", str(built)], check=True,
                   env=without_sanitizer_runtime(os.environ))
    bundle = tmp_path / "transe_l2.kgebundle"
    subprocess.run(f"{BUILD_ROOT}/bin/kge-opt -kge-lower-to-gpu "
                   f"{SOURCE_ROOT}/examples/bvec/transe_l2.mlir | "
                   f"{BUILD_ROOT}/bin/kge-translate --kge-to-bundle -o {bundle}",
                   shell=True, check=True)
    code = textwrap.dedent(f"""
        import ctypes, pathlib, subprocess
        import kge_runtime, kge_runtime_c
        text = pathlib.Path("{bundle}").read_text()
        print(kge_runtime.validate_bundle(text)["name"])
        lib = ctypes.CDLL(kge_runtime_c.library())
        print("api", lib.kgertCheckApiVersion(1))
        print(pathlib.Path(kge_runtime_c.include_dir(), "kge-c", "Runtime.h").exists())
        for path in (kge_runtime.__file__, kge_runtime_c.library(), kge_runtime_c.bundle_run()):
            linked = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
            print("mlir" in linked.lower())
    """)
    env = {k: v for k, v in without_sanitizer_runtime(os.environ).items()
           if k not in ("PYTHONPATH", "KGE_BUILD_DIR")}
    result = subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True,
                            text=True, env=env, cwd="/")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:6] == ["transe_l2", "api 0", "True", "False", "False",
                                             "False"], result.stdout
