"""Embeddings beyond GPU memory (kge.out_of_core): partition files,
bucketed edges and a schedule walked along Legend's order — every edge
trained once, the result equal to training in memory, the loads equal to
the order's I/O count; foreign or misplaced partition files refused."""

import numpy as np
import pytest

from kge import checkpoint, out_of_core as ooc, partition_order as po

MODEL = checkpoint.fingerprint({"model": "test", "dim": 3})


def graph(rng, entities=103, edges=2000):
    # Power-law heads and tails, as in real knowledge graphs.
    weights = 1.0 / np.arange(1, entities + 1) ** 0.8
    weights /= weights.sum()
    return rng.choice(entities, edges, p=weights), rng.choice(entities, edges, p=weights)


def test_buckets_group_every_edge_by_its_partitions():
    rng = np.random.default_rng(0)
    heads, tails = graph(rng)
    ranges = ooc.partition_ranges(7, 103)
    assert ranges[0] == 0 and ranges[-1] == 103 and set(np.diff(ranges)) <= {14, 15}
    permutation, offsets = ooc.bucket_edges(heads, tails, ranges)
    assert sorted(permutation) == list(range(len(heads)))
    for a in range(7):
        for b in range(7):
            edges = permutation[offsets[a * 7 + b]:offsets[a * 7 + b + 1]]
            assert ((heads[edges] >= ranges[a]) & (heads[edges] < ranges[a + 1])).all()
            assert ((tails[edges] >= ranges[b]) & (tails[edges] < ranges[b + 1])).all()
    with pytest.raises(ValueError, match="edge 1 has tail 103 outside the 103 entities"):
        ooc.bucket_edges([0, 1], [2, 103], ranges)
    with pytest.raises(ValueError, match="cannot make 8 non-empty partitions"):
        ooc.partition_ranges(8, 7)


@pytest.mark.parametrize("n", [4, 7, 10])
def test_legend_schedule_trains_like_memory_with_the_orders_loads(tmp_path, n):
    rng = np.random.default_rng(n)
    heads, tails = graph(rng)
    entities = 103
    tables = {"embedding": rng.standard_normal((entities, 3)).astype(np.float32),
              "state": np.zeros((entities, 3), np.float32)}
    ranges = ooc.partition_ranges(n, entities)
    store = ooc.PartitionStore.create(tmp_path, tables, ranges, MODEL)
    permutation, offsets = ooc.bucket_edges(heads, tails, ranges)
    visits = np.zeros(len(heads), int)

    def train(bucket, buffer):
        a, b = bucket
        edges = permutation[offsets[a * n + b]:offsets[a * n + b + 1]]
        visits[edges] += 1
        # An update whose result does not depend on the order: the head's
        # state counts its edges, its embedding moves by the tail's id.
        np.add.at(buffer[a]["state"], heads[edges] - ranges[a], 1.0)
        np.add.at(buffer[b]["embedding"], tails[edges] - ranges[b], 0.5)

    states = po.legend_order(n)
    trained = ooc.run_schedule(states, po.legend_buckets(states, n), store, train)
    assert trained == n * n and (visits == 1).all()
    assert store.loads == po.io_count(states)
    assert store.stores == store.loads  # each loaded partition written back once
    expected_state = np.zeros((entities, 3), np.float32)
    np.add.at(expected_state, heads, 1.0)
    expected_embedding = tables["embedding"].copy()
    np.add.at(expected_embedding, tails, 0.5)
    result = store.gather()
    np.testing.assert_allclose(result["state"], expected_state)
    np.testing.assert_allclose(result["embedding"], expected_embedding, rtol=1e-6)


def test_misplaced_and_foreign_partition_files_are_refused(tmp_path):
    tables = {"embedding": np.arange(30, dtype=np.float32).reshape(10, 3)}
    ranges = ooc.partition_ranges(4, 10)
    store = ooc.PartitionStore.create(tmp_path, tables, ranges, MODEL)
    # Partition 1's file where partition 2's should be.
    store.path(2).write_bytes(store.path(1).read_bytes())
    with pytest.raises(checkpoint.CheckpointError, match="holds partition 1 .* not partition 2"):
        store.load(2)
    other = ooc.PartitionStore(tmp_path, ranges, checkpoint.fingerprint({"model": "other"}))
    with pytest.raises(checkpoint.CheckpointError, match="belongs to model"):
        other.load(0)
    with pytest.raises(ValueError, match="lacks its partitions"):
        ooc.run_schedule([(0, 1, 3)], [[(0, 2)]], store, lambda bucket, buffer: None)
    with pytest.raises(ValueError, match="the partitions cover 11 entities"):
        ooc.PartitionStore.create(tmp_path, tables, ooc.partition_ranges(4, 11), MODEL)


def test_swap_plan_sorts_chunked_buckets_by_their_partitions():
    """A bucket may carry a chunk, (a, b, k, m): before the swap go the
    buckets whose partitions include the evicted one, not those whose chunk
    numbers happen to equal it."""
    states = [(0, 1, 2), (0, 2, 3)]
    buckets = [[(0, 0, 0, 1), (1, 2), (2, 2, 1, 3), (0, 2)], [(3, 3, 0, 1), (0, 3)]]
    plan = ooc.swap_plan(states, buckets)
    assert plan[0][1:4] == ([(1, 2)], 1, 3)
    assert plan[0][4] == [(0, 0, 0, 1), (2, 2, 1, 3), (0, 2)]
    with pytest.raises(ValueError, match="lacks its partitions"):
        ooc.swap_plan(states, [[(1, 3, 0, 2)], []])


def test_a_partition_file_copies_into_a_store_of_the_same_partitions(tmp_path):
    ranges = ooc.partition_ranges(3, 10)
    tables = {"E": np.arange(20, dtype=np.float32).reshape(10, 2)}
    store = ooc.PartitionStore.create(tmp_path / "a", tables, ranges, "m")
    target = ooc.PartitionStore(tmp_path / "b", ranges, "m")
    store.copy(1, target)
    assert np.array_equal(target.load(1)["E"], tables["E"][3:6])
    with pytest.raises(ValueError, match="same partitions and model"):
        store.copy(1, ooc.PartitionStore(tmp_path / "c", ranges, "other"))
    with pytest.raises(ValueError, match="same partitions and model"):
        store.copy(1, ooc.PartitionStore(tmp_path / "c", ooc.partition_ranges(2, 10), "m"))
