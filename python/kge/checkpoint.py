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
another kind or of another model.
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


def save(path, arrays, kind, model, meta=None):
    """Writes `arrays` ({name: ndarray}) to `path` atomically."""
    path = pathlib.Path(path)
    entries, offset, digest = [], 0, hashlib.sha256()
    blobs = []
    for name, array in arrays.items():
        array = np.ascontiguousarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"array '{name}' holds Python objects; checkpoints hold numbers")
        blob = array.tobytes()
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
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load(path, kind, model=None):
    """(arrays, meta) of the file at `path`, checked: its kind, its model
    (when `model` is given), its length and its digest."""
    path = pathlib.Path(path)
    data = path.read_bytes()
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
        header = json.loads(data[start:start + length])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} has a corrupt header: {error}") from None
    if not isinstance(header, dict) or not isinstance(header.get("arrays"), list):
        raise CheckpointError(f"{path} has a corrupt header: no array list")
    if header.get("kind") != kind:
        raise CheckpointError(f"{path} is a {header.get('kind')!r} file, not a {kind!r} file")
    if model is not None and header.get("model") != model:
        raise CheckpointError(f"{path} belongs to model {header.get('model')}, not to {model}")
    payload = memoryview(data)[start + length:]
    total = sum(int(e.get("bytes", 0)) for e in header["arrays"])
    if len(payload) != total:
        raise CheckpointError(f"{path} is truncated or padded: its arrays need {total} bytes, "
                              f"{len(payload)} present")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise CheckpointError(f"{path} is corrupted: its arrays do not match their digest")
    arrays = {}
    for entry in header["arrays"]:
        try:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            begin, size = int(entry["offset"]), int(entry["bytes"])
            if dtype.hasobject or size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
                raise ValueError("its size does not match its shape")
            array = np.frombuffer(payload[begin:begin + size], dtype=dtype).reshape(shape)
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f"{path} has a corrupt entry for array "
                                  f"{entry.get('name')!r}: {error}") from None
        arrays[entry["name"]] = array.copy()
    return arrays, header.get("meta", {})
