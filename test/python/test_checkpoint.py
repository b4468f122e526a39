"""Checkpoint and partition files (kge.checkpoint): round trips, atomic
replacement, and refusal of truncated, corrupted or foreign files."""

import os

import numpy as np
import pytest

from kge import checkpoint as ck

MODEL = ck.fingerprint({"model": "transe", "dim": 4, "entities": 3, "relations": 2})


def arrays():
    rng = np.random.default_rng(0)
    return {"entities": rng.standard_normal((3, 4)).astype(np.float32),
            "state": rng.standard_normal((3, 4)),
            "step": np.array(7, np.int64),
            "empty": np.zeros((0, 4), np.float32)}


def test_round_trip(tmp_path):
    path = tmp_path / "model.ckpt"
    ck.save(path, arrays(), "checkpoint", MODEL, meta={"epoch": 3})
    loaded, meta = ck.load(path, "checkpoint", MODEL)
    assert meta == {"epoch": 3} and loaded.keys() == arrays().keys()
    for name, array in arrays().items():
        assert loaded[name].dtype == array.dtype
        np.testing.assert_array_equal(loaded[name], array)
    assert [p.name for p in tmp_path.iterdir()] == ["model.ckpt"]  # no temporary left


def test_truncated_and_corrupted_files_are_refused(tmp_path):
    path = tmp_path / "model.ckpt"
    ck.save(path, arrays(), "checkpoint", MODEL)
    data = path.read_bytes()
    header_end = 16 + int.from_bytes(data[8:16], "little")
    for cut, message in ((5, "not a KGE checkpoint"), (12, "no header length"),
                         (40, "its header needs"), (header_end + 10, "arrays need"),
                         (len(data) - 1, "arrays need")):
        path.write_bytes(data[:cut])
        with pytest.raises(ck.CheckpointError, match=message):
            ck.load(path, "checkpoint", MODEL)
    flipped = bytearray(data)
    flipped[-3] ^= 0x40
    path.write_bytes(bytes(flipped))
    with pytest.raises(ck.CheckpointError, match="do not match their digest"):
        ck.load(path, "checkpoint", MODEL)
    broken = bytearray(data)
    broken[17] = ord("#")
    path.write_bytes(bytes(broken))
    with pytest.raises(ck.CheckpointError, match="corrupt header"):
        ck.load(path, "checkpoint", MODEL)


def test_files_of_another_kind_or_model_are_refused(tmp_path):
    path = tmp_path / "part.bin"
    ck.save(path, arrays(), "partition", MODEL)
    with pytest.raises(ck.CheckpointError, match="is a 'partition' file, not a 'checkpoint'"):
        ck.load(path, "checkpoint", MODEL)
    other = ck.fingerprint({"model": "transe", "dim": 8, "entities": 3, "relations": 2})
    with pytest.raises(ck.CheckpointError, match=f"belongs to model {MODEL}, not to {other}"):
        ck.load(path, "partition", other)
    with pytest.raises(TypeError, match="Python objects"):
        ck.save(path, {"bad": np.array([object()])}, "partition", MODEL)


def test_an_interrupted_save_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "model.ckpt"
    ck.save(path, arrays(), "checkpoint", MODEL, meta={"epoch": 1})

    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ck.save(path, {"entities": np.ones((3, 4), np.float32)}, "checkpoint", MODEL,
                meta={"epoch": 2})
    monkeypatch.undo()
    loaded, meta = ck.load(path, "checkpoint", MODEL)
    assert meta == {"epoch": 1}
    np.testing.assert_array_equal(loaded["entities"], arrays()["entities"])
    assert [p.name for p in tmp_path.iterdir()] == ["model.ckpt"]
