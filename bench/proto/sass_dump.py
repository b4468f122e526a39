"""Disassembles the cubins of kernel bundles (GPU machine: cuobjdump) and
counts the local-memory traffic of each kernel: spill stores (STL) and
loads (LDL), and calls.

    python3 bench/proto/sass_dump.py --out $OUT/sass a.kgebundle b.kgebundle
"""
import argparse
import base64
import json
import pathlib
import subprocess
import tempfile

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=pathlib.Path, required=True)
parser.add_argument("bundles", nargs="+", type=pathlib.Path)
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
for path in args.bundles:
    bundle = json.loads(path.read_text())
    for module in bundle["modules"]:
        if not module.get("cubin_base64"):
            continue
        with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
            cubin.write(base64.b64decode(module["cubin_base64"]))
            cubin.flush()
            sass = subprocess.run(["cuobjdump", "-sass", cubin.name], capture_output=True,
                                  text=True, check=True).stdout
        name = f"{path.stem}.{module['name']}.sass"
        (args.out / name).write_text(sass)
        lines = sass.splitlines()
        count = lambda op: sum(1 for l in lines if f" {op}" in l)
        print(f"{name}: {len(lines)} lines, STL {count('STL')}, LDL {count('LDL')}, "
              f"CALL {count('CALL')}, BRA {count('BRA')}")
