"""Checkpoint and partition files for training: written atomically, read
whole or not at all.

A file holds named arrays and a JSON header:

    KGECKPT1 | header length (8 bytes, little endian) | header (JSON) | arrays

The header names the file's `kind` (a checkpoint, a partition, ...), the
`model` it belongs to (a fingerprint of the model's configuration: kind,
dimensions, entity and relation counts), free `meta` data, and each array's
name, dtype, shape, offset and length; `sha256` is the digest of the
arrays' bytes. `save` writes a temporary file in the same directory, syncs
it and renames it over the target (POSIX rename is atomic): an interrupted
save leaves the previous file intact. `load` refuses, with a message
naming the problem, a file that is not one, truncated, corrupted, of
another kind or of another model; `read_into` does the same checks while
reading the arrays straight into ones the caller holds (pinned host
buffers of kge.out_of_core), with no copy.
"""

import hashlib
import json
import os
import pathlib
import tempfile

import numpy as np

MAGIC = b"KGECKPT1"


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
    entries, offset, digest = [], 0, hashlib.sha256()
    blobs = []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"array '{name}' holds Python objects; checkpoints hold numbers")
        blob = memoryview(array.reshape(-1)).cast("B")
        entries.append({"name": name, "dtype": array.dtype.str, "shape": list(array.shape),
                        "offset": offset, "bytes": len(blob)})
        digest.update(blob)
        blobs.append(blob)
        offset += len(blob)
    header = json.dumps({"kind": kind, "model": model, "meta": meta or {},
                         "arrays": entries, "sha256": digest.hexdigest()}).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(MAGIC)
            out.write(len(header).to_bytes(8, "little"))
            out.write(header)
            for blob in blobs:
                out.write(blob)
            out.flush()
            if sync:
                os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
    if sync:
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


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


def _entry(path, entry):
    """(name, dtype, shape, offset, bytes) of a header's array entry."""
    try:
        dtype = np.dtype(entry["dtype"])
        shape = tuple(int(d) for d in entry["shape"])
        begin, size = int(entry["offset"]), int(entry["bytes"])
        if dtype.hasobject or size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError("its size does not match its shape")
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path} has a corrupt entry for array "
                              f"{entry.get('name') if isinstance(entry, dict) else entry!r}: "
                              f"{error}") from None
    return entry.get("name"), dtype, shape, begin, size


def load(path, kind, model=None):
    """(arrays, meta) of the file at `path`, checked: its kind, its model
    (when `model` is given), its length and its digest."""
    path = pathlib.Path(path)
    data = path.read_bytes()
    header, start = _header(path, data, kind, model)
    payload = memoryview(data)[start:]
    total = sum(int(e.get("bytes", 0)) for e in header["arrays"] if isinstance(e, dict))
    if len(payload) != total:
        raise CheckpointError(f"{path} is truncated or padded: its arrays need {total} bytes, "
                              f"{len(payload)} present")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{path} is corrupted: its arrays do not match their digest")
    arrays = {}
    for entry in header["arrays"]:
        name, dtype, shape, begin, size = _entry(path, entry)
        arrays[name] = np.frombuffer(payload[begin:begin + size], dtype=dtype).reshape(shape).copy()
    return arrays, header.get("meta", {})


def read_into(path, kind, model, arrays):
    """Reads the file at `path` into `arrays` ({name: contiguous ndarray}
    the caller holds) and returns its meta, with load's checks and one
    more: the file holds exactly these arrays with these dtypes and shapes,
    in this order. On any error the arrays' contents are undefined (the
    caller's buffers; nothing else is touched)."""
    path = pathlib.Path(path)
    with open(path, "rb") as handle:
        head = handle.read(len(MAGIC) + 8)
        if len(head) == len(MAGIC) + 8:
            head += handle.read(int.from_bytes(head[len(MAGIC):], "little"))
        header, start = _header(path, head, kind, model)
        expected = [(name, a.dtype, a.shape) for name, a in arrays.items()]
        found = [_entry(path, e)[:3] for e in header["arrays"]]
        if found != expected:
            raise CheckpointError(
                f"{path} holds arrays {[(n, d.str, list(s)) for n, d, s in found]}, expected "
                f"{[(n, d.str, list(s)) for n, d, s in expected]}")
        digest = hashlib.sha256()
        for name, array in arrays.items():
            if not array.flags.c_contiguous:
                raise ValueError(f"array '{name}' to read into is not contiguous")
            view = memoryview(array.reshape(-1)).cast("B")
            if handle.readinto(view) != len(view):
                raise CheckpointError(f"{path} is truncated: array '{name}' is cut short")
            digest.update(view)
        if handle.read(1):
            raise CheckpointError(f"{path} is truncated or padded: bytes after its arrays")
    if digest.hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{path} is corrupted: its arrays do not match their digest")
    return header.get("meta", {})
