"""Autotuning: choosing among compiled variants of one kernel by timing
them on the GPU, once per kernel, argument shapes and device.

The compiler side (``kge.tile.autotune``) compiles the variants; this
module needs only the runtime, so a machine without the compiler can tune
bundles compiled elsewhere:

    programs = {name: kge.runtime.Program(text) for name, text in variants.items()}
    choice = kge.autotune.select(programs, arrays)
    programs[choice.best](**arrays)

Tuning never writes the caller's arrays: every call runs on copies of the
arrays the kernel may write (its outputs), made once before timing.

A choice is remembered in a ``TuningCache`` (a JSON file per key under
``kge.cache.cache_dir()/autotune``), so a later process with the same key
takes it without timing anything.
"""

import dataclasses
import hashlib
import json
import math
import os
import pathlib


class AutotuneError(ValueError):
    """No variant could be timed, or the variants or arrays are unusable."""


@dataclasses.dataclass
class Choice:
    """The outcome of tuning: the fastest variant's name, the time per call
    (seconds) of every variant that ran, and the error of each one that
    failed. `cached`: read from a TuningCache, nothing was timed."""
    best: str
    times: dict
    failures: dict = dataclasses.field(default_factory=dict)
    cached: bool = False

    def to_json(self):
        return {"best": self.best, "times": self.times, "failures": self.failures}


def cuda_event_timer(fn, warmup=3, rounds=5, min_seconds=2e-3):
    """Seconds per call of `fn` on the current CUDA stream: the median of
    `rounds` rounds of back-to-back calls timed with CUDA events (torch),
    each round long enough (`min_seconds`) for the events' resolution."""
    import torch
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    once = max(start.elapsed_time(end) * 1e-3, 1e-7)
    calls = max(1, min(1000, math.ceil(min_seconds / once)))
    samples = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3 / calls)
    samples.sort()
    return samples[len(samples) // 2]


def _copy(array):
    """A copy of `array` on its device (torch tensors, CuPy and NumPy
    arrays)."""
    for method in ("clone", "copy"):
        if callable(getattr(array, method, None)):
            return getattr(array, method)()
    raise AutotuneError(f"cannot copy an array of type {type(array).__name__} for tuning "
                        "(pass torch tensors or CuPy arrays)")


def select(programs, arrays, outputs=(), timer=None):
    """Times each of `programs` (name -> callable taking the arrays by
    keyword, e.g. a kge_runtime.Program) on `arrays` and returns a Choice.

    `outputs`: names of the arrays the programs write (select, top-k and
    aggregate outputs are updated in place): they are copied once and the
    copies are passed instead, so the caller's arrays keep their values.
    `timer(fn) -> seconds per call` (default: cuda_event_timer). A variant
    that raises (e.g. a launch the device refuses) is recorded in
    `failures` and skipped; if none runs, AutotuneError names each error."""
    if not programs:
        raise AutotuneError("no variants to tune")
    unknown = sorted(set(outputs) - set(arrays))
    if unknown:
        raise AutotuneError(f"outputs {unknown} are not among the arrays")
    timer = timer or cuda_event_timer
    call_arrays = dict(arrays)
    for name in outputs:
        call_arrays[name] = _copy(arrays[name])
    times, failures = {}, {}
    for name, program in programs.items():
        try:
            seconds = float(timer(lambda program=program: program(**call_arrays)))
        except Exception as error:  # noqa: BLE001 - a variant's failure is data
            failures[name] = f"{type(error).__name__}: {error}"
            continue
        if not math.isfinite(seconds) or seconds < 0:
            failures[name] = f"timer returned {seconds!r}"
            continue
        times[name] = seconds
    if not times:
        raise AutotuneError("no variant ran: " + "; ".join(f"{k}: {v}" for k, v in failures.items()))
    # Ties go to the first listed (the heuristic's choice is listed first).
    best = min(times, key=lambda name: (times[name], list(programs).index(name)))
    return Choice(best, times, failures)


def shape_key(arrays):
    """What of the arrays a tuning choice depends on: each one's shape and
    dtype (not its values)."""
    key = {}
    for name, array in sorted(arrays.items()):
        shape = getattr(array, "shape", None)
        if shape is None:
            raise AutotuneError(f"'{name}' has no shape (pass arrays)")
        key[name] = [list(int(s) for s in shape), str(getattr(array, "dtype", ""))]
    return key


def device_name():
    """The name of the current CUDA device (torch), or '' without one."""
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_name()
    except ImportError:
        pass
    return ""


class TuningCache:
    """Tuning choices on disk, one JSON file per key (a hash of what the
    choice depends on: the kernel's identity, the variants, the argument
    shapes and the device). Files are written whole under another name and
    renamed, so a reader never sees half a record; an unreadable record is
    ignored (and retuned), never trusted."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)

    @staticmethod
    def key(**parts):
        text = json.dumps(parts, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def path(self, key):
        return self.directory / f"{key}.json"

    def get(self, key, variants):
        """The Choice stored under `key` if it names one of `variants`."""
        try:
            record = json.loads(self.path(key).read_text())
            best, times = record["best"], record["times"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if best not in variants or not isinstance(times, dict):
            return None
        return Choice(best, times, record.get("failures", {}), cached=True)

    def put(self, key, choice):
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path(key)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(json.dumps(choice.to_json(), indent=1, sort_keys=True))
        partial.replace(path)
