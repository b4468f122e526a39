"""The on-disk cache of compiled kernel bundles.

Every compile of the Python front end (score functions, their gradients,
tile queries, graph layers, Gram solvers) goes through `cached()`: a bundle
is stored under a key that hashes what determines it — the IR, the pass
pipeline and its options, the target (chip; cubin or not, and whether
ptxas was there to assemble one) and the compiler (KGE's version and the
build id of its compiler extension) — so a repeated compile reads a file
instead of running MLIR and ptxas. The key names nothing local to one
machine: a cache filled where the compiler is serves a machine that has
only the runtime.

    KGE_CACHE_DIR        the directory (default ~/.cache/kge/bundles)
    KGE_CACHE=0          turns the cache off (as does cache=False on a call)
    KGE_CACHE_MAX_BYTES  its size bound (default 1 GiB); the least recently
                         used entries are evicted past it

An entry is one file: a header line with the SHA-256 of the bundle text,
then the text. A reader checks the digest; an entry that does not match
(truncated, overwritten, bit rot) is removed and the bundle recompiled,
never loaded. Writers write a private temporary file and rename it into
place, so concurrent processes never see half an entry and the last of
several identical writes wins; eviction tolerates entries that another
process removed first.
"""

import hashlib
import json
import os
import pathlib
import shutil
import threading
import uuid

_MAGIC = b"KGECACHE1 "
_SUFFIX = ".kgebundle"
_DEFAULT_MAX_BYTES = 1 << 30

_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "corrupt": 0, "evicted": 0, "writes": 0}


class CacheError(ValueError):
    """A cache setting that cannot be used (a bad KGE_CACHE_MAX_BYTES)."""


def cache_dir():
    """Where bundles are kept: $KGE_CACHE_DIR, else ~/.cache/kge/bundles."""
    root = os.environ.get("KGE_CACHE_DIR")
    return pathlib.Path(root) if root else pathlib.Path.home() / ".cache" / "kge" / "bundles"


def enabled():
    """False when KGE_CACHE is 0, off, false or no."""
    return os.environ.get("KGE_CACHE", "1").strip().lower() not in ("0", "off", "false", "no")


def max_bytes():
    """The size bound: $KGE_CACHE_MAX_BYTES (a positive integer), else 1 GiB."""
    text = os.environ.get("KGE_CACHE_MAX_BYTES")
    if text is None:
        return _DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise CacheError(f"KGE_CACHE_MAX_BYTES must be a positive integer, got {text!r}")
    return value


def stats():
    """This process's counts: hits, misses, corrupt entries found, entries
    evicted, entries written."""
    with _lock:
        return dict(_stats)


def _count(name, n=1):
    with _lock:
        _stats[name] += n


_identity = None


def compiler_identity():
    """What identifies the compiler: KGE's version and the SHA-256 of its
    compiler extension (kge/_build_id.py, written by the build), so that a
    rebuilt compiler never reuses an older bundle — and a machine without
    the compiler (a GPU machine with the runtime only) that holds the
    package's _build_id.py reads the bundles that compiler cached."""
    global _identity
    if _identity is None:
        from . import __version__
        try:
            from ._build_id import BUILD_ID
        except ImportError:
            # A package assembled without the build's id: the extension's
            # file stands for it.
            from . import _compiler
            stat = pathlib.Path(_compiler.__file__).stat()
            BUILD_ID = f"{stat.st_size}:{stat.st_mtime_ns}"
        _identity = f"{__version__}:{BUILD_ID}"
    return _identity


def ptxas_found():
    """Whether ptxas is there to assemble cubins: a bundle compiled without
    it holds PTX only, and must not stand in for one with a cubin."""
    return bool(shutil.which("ptxas") or os.path.exists("/usr/local/cuda/bin/ptxas"))


def key(payload, chip="sm_90", cubin=True):
    """The hex key of a bundle: `payload` is a JSON-able description of the
    IR and the options that produce it."""
    text = json.dumps({"payload": payload, "chip": chip, "cubin": bool(cubin),
                       "ptxas": ptxas_found() if cubin else None,
                       "compiler": compiler_identity()},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def entry_path(hex_key):
    return cache_dir() / (hex_key + _SUFFIX)


def _encode(text):
    data = text.encode()
    return _MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def _decode(raw):
    """The bundle text of an entry, or None when the entry is corrupt."""
    if not raw.startswith(_MAGIC):
        return None
    newline = raw.find(b"\n", len(_MAGIC))
    if newline != len(_MAGIC) + 64:
        return None
    digest, data = raw[len(_MAGIC):newline].decode("ascii", "replace"), raw[newline + 1:]
    if hashlib.sha256(data).hexdigest() != digest:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def load(hex_key):
    """The cached bundle text of `hex_key`, or None (a miss, or a corrupt
    entry, which is removed)."""
    path = entry_path(hex_key)
    try:
        raw = path.read_bytes()
    except OSError:  # absent, unreadable, or no directory at all
        _count("misses")
        return None
    text = _decode(raw)
    if text is None:
        _count("corrupt")
        _count("misses")
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        return None
    try:
        os.utime(path)  # most recently used
    except OSError:
        pass
    _count("hits")
    return text


def store(hex_key, text):
    """Writes the entry of `hex_key` atomically, then keeps the cache under
    its size bound. Failures to write (a read-only or full disk) leave the
    cache as it was: a cache never fails a compile."""
    bound = max_bytes()
    directory = cache_dir()
    path = entry_path(hex_key)
    partial = directory / f".{hex_key}.{os.getpid()}.{uuid.uuid4().hex}.partial"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as out:
            out.write(_encode(text))
        os.replace(partial, path)
    except OSError:
        try:
            partial.unlink()
        except OSError:
            pass
        return False
    _count("writes")
    evict(bound)
    return True


def _entries():
    entries = []
    try:
        with os.scandir(cache_dir()) as it:
            for item in it:
                if not item.name.endswith(_SUFFIX):
                    continue
                try:
                    stat = item.stat()
                except FileNotFoundError:
                    continue
                entries.append((stat.st_mtime_ns, stat.st_size, item.path))
    except OSError:
        pass
    return entries


def size():
    """Bytes the cache's entries take."""
    return sum(size for _, size, _ in _entries())


def evict(bound=None):
    """Removes least recently used entries until the cache holds at most
    90 % of `bound` bytes (default max_bytes()) — only when it exceeds
    `bound`. Returns the number of entries removed."""
    bound = max_bytes() if bound is None else bound
    entries = _entries()
    total = sum(size for _, size, _ in entries)
    if total <= bound:
        return 0
    removed = 0
    for _, entry_size, entry in sorted(entries):
        if total <= bound * 0.9:
            break
        try:
            os.unlink(entry)
            removed += 1
        except FileNotFoundError:
            pass  # another process evicted it first
        total -= entry_size
    _count("evicted", removed)
    return removed


def clear():
    """Removes every entry (and abandoned partial writes)."""
    try:
        with os.scandir(cache_dir()) as it:
            for item in it:
                if item.name.endswith(_SUFFIX) or item.name.endswith(".partial"):
                    try:
                        os.unlink(item.path)
                    except FileNotFoundError:
                        pass
    except FileNotFoundError:
        pass


def cached(payload, build, cache=True, chip="sm_90", cubin=True):
    """The bundle `build()` compiles (a kge.Bundle), read from the cache when
    the same `payload` was compiled for the same target by the same
    compiler before; `cache=False` or KGE_CACHE=0 compiles every time."""
    from .compiler import Bundle
    use = cache and enabled()
    hex_key = None
    if use:
        hex_key = key(payload, chip, cubin)
        text = load(hex_key)
        if text is not None:
            return Bundle(text)
    bundle = build()
    if use:
        store(hex_key, bundle.text)
    return bundle
