"""Checkpoint and partition files for training: written atomically, read
whole or not at all.

A file holds named arrays and a JSON header:

    KGECKPT2 | header length (8 bytes, little endian) | header (JSON) | arrays

The header names the file's `kind` (a checkpoint, a partition, ...), the
`model` it belongs to (a fingerprint of the model's configuration: kind,
dimensions, entity and relation counts), free `meta` data, and each array's
name, dtype, shape, offset and length, with the SHA-256 digests of its
bytes in pieces of `chunk_bytes` (16 MB): the pieces are hashed, written and read
by several threads at once (os.pwrite / os.preadv release the GIL), which
is what lets kge.out_of_core swap a partition while the GPU trains.

`save` writes a temporary file in the same directory and renames it over
the target (POSIX rename is atomic): an interrupted save leaves the
previous file intact; with `sync` the file is flushed to the device first.
`load` refuses, with a message naming the problem, a file that is not one,
truncated, corrupted, of another kind or of another model; `read_into`
does the same checks while reading the arrays straight into ones the
caller holds (pinned host buffers), with no copy.
"""

import hashlib
import json
import os
import pathlib
import tempfile

import numpy as np

MAGIC = b"KGECKPT2"
CHUNK_BYTES = 16 << 20
_POOL = None


def _pool():
    """The threads that hash, write and read pieces of files."""
    global _POOL
    if _POOL is None:
        import concurrent.futures
        _POOL = concurrent.futures.ThreadPoolExecutor(min(8, os.cpu_count() or 1),
                                                      "kge-checkpoint")
    return _POOL


def _pieces(view):
    """(start, piece) of a byte view in CHUNK_BYTES pieces (one for an
    empty view)."""
    return [(i, view[i:i + CHUNK_BYTES]) for i in range(0, max(len(view), 1), CHUNK_BYTES)]


def _digest(piece):
    return hashlib.sha256(piece).hexdigest()


class CheckpointError(ValueError):
    """A file that cannot be loaded as asked (the message says why)."""


def fingerprint(config):
    """A short digest of a model configuration (any JSON-serializable
    dict): files record it, and load refuses a file of another one."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def save(path, arrays, kind, model, meta=None, sync=True):
    """Writes `arrays` ({name: ndarray}) to `path` atomically: a temporary
    file renamed over the target. With `sync` (the default) the file and
    its directory are flushed to the device before the call returns, so the
    file survives a power loss too; without it, it survives the process
    (the rename is still atomic)."""
    path = pathlib.Path(path)
    entries, views, offset = [], [], 0
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"array '{name}' holds Python objects; checkpoints hold numbers")
        view = memoryview(array.reshape(-1)).cast("B")
        entries.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape),
                        "offset": offset, "bytes": len(view)})
        views.append(view)
        offset += len(view)
    pieces = [(e, start, piece) for e, view in zip(entries, views) for start, piece in _pieces(view)]
    digests = list(_pool().map(lambda item: _digest(item[2]), pieces))
    for entry in entries:
        entry["sha256"] = []
    for (entry, _, _), digest in zip(pieces, digests):
        entry["sha256"].append(digest)
    header = json.dumps({"kind": kind, "model": model, "meta": meta or {},
                         "chunk_bytes": CHUNK_BYTES, "arrays": entries}).encode()
    prefix = MAGIC + len(header).to_bytes(8, "little") + header

    def write(handle):
        _write_all(handle, prefix, 0)
        list(_pool().map(lambda item: _write_all(handle, item[2],
                                                 len(prefix) + item[0]["offset"] + item[1]),
                         pieces))

    replace_atomically(path, write, sync)


def write_bytes(path, data, sync=True):
    """`data` to `path` atomically (replace_atomically)."""
    replace_atomically(pathlib.Path(path), lambda handle: _write_all(handle, data, 0), sync)


def replace_atomically(path, write, sync=True):
    """Writes a temporary file beside `path` through `write(descriptor)` and
    renames it over `path` (POSIX rename is atomic: readers see the old
    file or the new one, never half); with `sync` the file and its
    directory are flushed to the device first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        write(handle)
        if sync:
            os.fsync(handle)
        os.close(handle)
        handle = None
        os.replace(temporary, path)
    except BaseException:
        if handle is not None:
            os.close(handle)
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
    if sync:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _write_all(handle, data, offset):
    view = memoryview(data)
    while len(view):
        written = os.pwrite(handle, view, offset)
        view, offset = view[written:], offset + written


def _header(path, data, kind, model):
    """The checked header of a file whose first bytes are `data` (at least
    the header), and where its arrays start."""
    if data[:len(MAGIC)] != MAGIC:
        raise CheckpointError(f"{path} is not a KGE checkpoint file (no {MAGIC.decode()} "
                              "header)")
    start = len(MAGIC) + 8
    if len(data) < start:
        raise CheckpointError(f"{path} is truncated: {len(data)} bytes, no header length")
    length = int.from_bytes(data[len(MAGIC):start], "little")
    if len(data) < start + length:
        raise CheckpointError(f"{path} is truncated: its header needs {length} bytes, "
                              f"{len(data) - start} present")
    try:
        header = json.loads(bytes(data[start:start + length]))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} has a corrupt header: {error}") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise CheckpointError(f"{path} has a corrupt header: no array list")
    if header.get("kind") != kind:
        raise CheckpointError(f"{path} is a {header.get('kind')!r} file, not a {kind!r} file")
    if model is not None and header.get("model") != model:
        raise CheckpointError(f"{path} belongs to model {header.get('model')}, not to {model}")
    return header, start + length


def _entry(path, entry, chunk_bytes):
    """(name, dtype, shape, offset, bytes, digests) of a header's array
    entry."""
    try:
        dtype = np.dtype(entry["dtype"])
        shape = tuple(int(d) for d in entry["shape"])
        begin, size = int(entry["offset"]), int(entry["bytes"])
        if dtype.hasobject or size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError("its size does not match its shape")
        digests = entry["sha256"]
        if not isinstance(digests, list) or len(digests) != max(1, -(-size // chunk_bytes)):
            raise ValueError("its digests do not cover its bytes")
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path} has a corrupt entry for array "
                              f"{entry.get('name') if isinstance(entry, dict) else entry!r}: "
                              f"{error}") from None
    return entry.get("name"), dtype, shape, begin, size, digests


def _open(path, kind, model):
    """(file handle, header, where the arrays start, entries) of the file
    at `path`, its header checked, its length matching its arrays."""
    handle = os.open(path, os.O_RDONLY)
    try:
        head = os.pread(handle, len(MAGIC) + 8, 0)
        if len(head) == len(MAGIC) + 8:
            head += os.pread(handle, int.from_bytes(head[len(MAGIC):], "little"), len(head))
        header, start = _header(path, head, kind, model)
        chunk_bytes = header.get("chunk_bytes")
        if not isinstance(chunk_bytes, int) or chunk_bytes <= 0:
            raise CheckpointError(f"{path} has a corrupt header: no chunk size")
        entries = [_entry(path, e, chunk_bytes) for e in header["arrays"]]
        total = sum(e[4] for e in entries)
        present = os.fstat(handle).st_size - start
        if present != total:
            raise CheckpointError(f"{path} is truncated or padded: its arrays need {total} "
                                  f"bytes, {present} present")
        return handle, header, start, entries, chunk_bytes
    except BaseException:
        os.close(handle)
        raise


def load(path, kind, model=None):
    """(arrays, meta) of the file at `path`, checked: its kind, its model
    (when `model` is given), its length and its digests."""
    path = pathlib.Path(path)
    handle, header, start, entries, chunk_bytes = _open(path, kind, model)
    try:
        arrays = {name: np.empty(shape, dtype) for name, dtype, shape, *_ in entries}
        _read_arrays(path, handle, start, entries, chunk_bytes, arrays)
    finally:
        os.close(handle)
    return arrays, header.get("meta", {})


def read_into(path, kind, model, arrays):
    """Reads the file at `path` into `arrays` ({name: contiguous ndarray}
    the caller holds) and returns its meta, with load's checks and one
    more: the file holds exactly these arrays with these dtypes and shapes,
    in this order. On any error the arrays' contents are undefined (the
    caller's buffers; nothing else is touched)."""
    path = pathlib.Path(path)
    handle, header, start, entries, chunk_bytes = _open(path, kind, model)
    try:
        expected = [(name, a.dtype, a.shape) for name, a in arrays.items()]
        found = [e[:3] for e in entries]
        if found != expected:
            raise CheckpointError(
                f"{path} holds arrays {[(n, d.str, list(s)) for n, d, s in found]}, expected "
                f"{[(n, d.str, list(s)) for n, d, s in expected]}")
        _read_arrays(path, handle, start, entries, chunk_bytes, arrays)
    finally:
        os.close(handle)
    return header.get("meta", {})


def _read_arrays(path, handle, start, entries, chunk_bytes, arrays):
    """Reads and checks every piece of every array, several at once."""
    work = []
    for name, _, _, begin, size, digests in entries:
        array = arrays[name]
        if not array.flags.c_contiguous:
            raise ValueError(f"array '{name}' to read into is not contiguous")
        view = memoryview(array.reshape(-1)).cast("B")
        for k, digest in enumerate(digests):
            work.append((name, view[k * chunk_bytes:(k + 1) * chunk_bytes],
                         start + begin + k * chunk_bytes, digest))

    def read(item):
        name, piece, offset, digest = item
        done = 0
        while done < len(piece):
            count = os.preadv(handle, [piece[done:]], offset + done)
            if count == 0:
                raise CheckpointError(f"{path} is truncated: array '{name}' is cut short")
            done += count
        return _digest(piece) == digest

    if not all(_pool().map(read, work)):
        raise CheckpointError(f"{path} is corrupted: its arrays do not match their digests")
