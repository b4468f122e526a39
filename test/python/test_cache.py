"""The bundle cache (kge.cache): a repeated compile reads the bundle the
first one stored; every input of the compile is part of the key; a corrupt
entry is detected by its digest and recompiled, never loaded; the cache
stays under its size bound; it can be turned off; concurrent processes
writing the same entries never see or leave half an entry."""

import os
import subprocess
import sys
import textwrap

import pytest

import kge
from conftest import BUILD_ROOT, SOURCE_ROOT
from kge import cache
from score_functions import FUNCTIONS


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KGE_CACHE_DIR", str(tmp_path / "bundles"))
    monkeypatch.delenv("KGE_CACHE", raising=False)
    monkeypatch.delenv("KGE_CACHE_MAX_BYTES", raising=False)
    return tmp_path / "bundles"


def entries(directory):
    return sorted(p for p in directory.glob("*.kgebundle"))


def delta(before):
    after = cache.stats()
    return {k: after[k] - before[k] for k in after}


def test_a_repeated_compile_reads_the_stored_bundle(fresh_cache):
    fn = FUNCTIONS["transe_l2"]
    before = cache.stats()
    first = fn.compile(cubin=False)
    assert delta(before) == {"hits": 0, "misses": 1, "corrupt": 0, "evicted": 0, "writes": 1}
    assert len(entries(fresh_cache)) == 1
    before = cache.stats()
    second = fn.compile(cubin=False)
    assert delta(before)["hits"] == 1 and delta(before)["misses"] == 0
    assert second.text == first.text


def test_every_input_of_the_compile_is_in_the_key(fresh_cache):
    fn = FUNCTIONS["distmult"]
    fn.compile(cubin=False)
    variants = [dict(cubin=False, negative="t"), dict(cubin=False, tile=64),
                dict(cubin=False, sizes={"D_Eemb": 64})]
    for options in variants:
        before = cache.stats()
        fn.compile(**options)
        assert delta(before)["misses"] == 1, options
    # Another function, and the gradient of the same one.
    before = cache.stats()
    FUNCTIONS["complex"].compile(cubin=False)
    fn.gradient().compile(cubin=False)
    assert delta(before)["misses"] == 2
    assert len(entries(fresh_cache)) == 6
    assert cache.key({"a": 1}, cubin=False) != cache.key({"a": 1}, chip="sm_80", cubin=False)
    assert cache.key({"a": 1}, cubin=False) != cache.key({"a": 2}, cubin=False)


@pytest.mark.parametrize("damage", ["flip", "truncate", "header", "empty"])
def test_a_corrupt_entry_is_recompiled_never_loaded(fresh_cache, damage):
    fn = FUNCTIONS["transe_l1"]
    good = fn.compile(cubin=False).text
    (path,) = entries(fresh_cache)
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0x01
    elif damage == "truncate":
        raw = raw[: len(raw) // 3]
    elif damage == "header":
        raw[:9] = b"NOTACACHE"
    else:
        raw = b""
    path.write_bytes(bytes(raw))
    before = cache.stats()
    again = fn.compile(cubin=False)
    counts = delta(before)
    assert counts["corrupt"] == 1 and counts["hits"] == 0 and counts["writes"] == 1
    assert again.text == good
    # The rewritten entry is whole again.
    assert cache.load(path.name[: -len(".kgebundle")]) == good


def test_the_cache_can_be_turned_off(fresh_cache, monkeypatch):
    fn = FUNCTIONS["rotate"]
    fn.compile(cubin=False, cache=False)
    assert entries(fresh_cache) == []
    monkeypatch.setenv("KGE_CACHE", "0")
    assert not cache.enabled()
    before = cache.stats()
    fn.compile(cubin=False)
    fn.compile(cubin=False)
    assert entries(fresh_cache) == [] and delta(before)["hits"] == 0


def test_the_cache_stays_under_its_size_bound(fresh_cache, monkeypatch):
    names = ["transe_l1", "transe_l2", "distmult", "complex", "rotate", "transh"]
    for name in names[:2]:
        FUNCTIONS[name].compile(cubin=False)
    one = max(p.stat().st_size for p in entries(fresh_cache))
    bound = int(one * 2.5)
    monkeypatch.setenv("KGE_CACHE_MAX_BYTES", str(bound))
    recent = None
    for name in names[2:]:
        FUNCTIONS[name].compile(cubin=False)
        recent = FUNCTIONS[name]
        assert cache.size() <= bound
    # The most recent entry survives eviction, the oldest do not.
    before = cache.stats()
    recent.compile(cubin=False)
    assert delta(before)["hits"] == 1
    before = cache.stats()
    FUNCTIONS[names[0]].compile(cubin=False)
    assert delta(before)["misses"] == 1


def test_a_bad_size_bound_is_named(fresh_cache, monkeypatch):
    monkeypatch.setenv("KGE_CACHE_MAX_BYTES", "lots")
    with pytest.raises(cache.CacheError, match="KGE_CACHE_MAX_BYTES must be a positive integer"):
        FUNCTIONS["transe_l2"].compile(cubin=False)


def test_an_unwritable_cache_never_fails_a_compile(fresh_cache):
    fresh_cache.parent.mkdir(parents=True, exist_ok=True)
    fresh_cache.write_text("a file where the directory should be")
    bundle = FUNCTIONS["transe_l2"].compile(cubin=False)
    assert bundle.name == "transe_l2"


def test_clear_removes_every_entry(fresh_cache):
    FUNCTIONS["transe_l2"].compile(cubin=False)
    (fresh_cache / ".abandoned.1.x.partial").write_text("x")
    cache.clear()
    assert list(fresh_cache.iterdir()) == []


WORKER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{packages!r}, {examples!r}]
    from kge import cache
    from score_functions import FUNCTIONS
    texts = set()
    for round in range(3):
        for name in ("transe_l2", "distmult", "complex"):
            texts.add((name, FUNCTIONS[name].compile(cubin=False).text))
    import hashlib
    for name, text in sorted(texts):
        print(name, hashlib.sha256(text.encode()).hexdigest())
""")


def test_concurrent_processes_share_the_cache_safely(fresh_cache):
    """Four processes compile the same functions into one empty cache at
    once: each sees one bundle per function, all see the same ones, and the
    cache ends with whole entries only."""
    script = WORKER.format(packages=str(BUILD_ROOT / "python_packages"),
                           examples=str(SOURCE_ROOT / "examples" / "python"))
    env = {**os.environ, "KGE_CACHE_DIR": str(fresh_cache)}
    workers = [subprocess.Popen([sys.executable, "-c", script], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(4)]
    outputs = []
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        outputs.append(out)
    assert len(set(outputs)) == 1 and len(outputs[0].splitlines()) == 3
    assert not list(fresh_cache.glob("*.partial")) and len(entries(fresh_cache)) == 3
    for path in entries(fresh_cache):
        assert cache.load(path.name[: -len(".kgebundle")]) is not None
