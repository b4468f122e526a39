"""Embeddings beyond GPU memory: partitions in files, edges in buckets, and
the schedule that trains every bucket while the buffer holds its two
partitions (Legend's setting; the orders are kge.partition_order's).

- `partition_ranges(n, num_entities)`: partition p holds the entities
  [ranges[p], ranges[p + 1]) (contiguous, sizes differing by at most one).
- `bucket_edges(heads, tails, ranges)`: the edges grouped by (head
  partition, tail partition): a permutation of the edges and the offsets
  of the n x n buckets in it.
- `PartitionStore`: the partitions' rows of every table (embeddings and
  their optimizer states) in one kge.checkpoint file per partition,
  counting loads and stores (the I/O volume).
- `run_schedule(states, buckets, store, train)`: walks an order's buffer
  states — loading the partitions a state adds, writing back the one it
  drops — and calls `train(bucket, buffer)` for each bucket of each state
  (`buckets[k]`, e.g. kge.partition_order.legend_buckets); writes the
  buffer back at the end. Its loads are the order's I/O count.
"""

import pathlib

import numpy as np

from . import checkpoint


def partition_ranges(n, num_entities):
    """The first entity of each of the n partitions, and num_entities."""
    if not 1 <= n <= num_entities:
        raise ValueError(f"{num_entities} entities cannot make {n} non-empty partitions")
    return np.linspace(0, num_entities, n + 1).astype(np.int64)


def bucket_edges(heads, tails, ranges):
    """(permutation, offsets): the edges in the order of their buckets
    (head partition, tail partition), bucket (a, b) at
    permutation[offsets[a * n + b]:offsets[a * n + b + 1]]."""
    heads, tails = np.asarray(heads, np.int64), np.asarray(tails, np.int64)
    n = len(ranges) - 1
    for name, ends in (("head", heads), ("tail", tails)):
        bad = (ends < 0) | (ends >= ranges[-1])
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(f"edge {k} has {name} {int(ends[k])} outside the "
                             f"{int(ranges[-1])} entities")
    bucket = (np.searchsorted(ranges, heads, "right") - 1) * n + \
        (np.searchsorted(ranges, tails, "right") - 1)
    permutation = np.argsort(bucket, kind="stable")
    offsets = np.searchsorted(bucket[permutation], np.arange(n * n + 1))
    return permutation, offsets


class PartitionStore:
    """The rows of each table ({name: [num_entities, ...]}) split by
    `ranges`, one file per partition in `directory` (kind "partition",
    the model's fingerprint), with load and store counters."""

    def __init__(self, directory, ranges, model):
        self.directory = pathlib.Path(directory)
        self.ranges = np.asarray(ranges, np.int64)
        self.model = model
        self.loads = self.stores = 0
        self.bytes_loaded = self.bytes_stored = 0

    @classmethod
    def create(cls, directory, tables, ranges, model):
        """Writes `tables` partition by partition; returns the store."""
        store = cls(directory, ranges, model)
        rows = {len(t) for t in tables.values()}
        if rows != {int(store.ranges[-1])}:
            raise ValueError(f"the tables have {sorted(rows)} rows; the partitions cover "
                             f"{int(store.ranges[-1])} entities")
        for p in range(len(ranges) - 1):
            begin, end = store.ranges[p], store.ranges[p + 1]
            store._write(p, {name: t[begin:end] for name, t in tables.items()})
        store.stores = store.bytes_stored = 0
        return store

    def path(self, p):
        return self.directory / f"partition-{p}.kge"

    def _write(self, p, arrays):
        checkpoint.save(self.path(p), arrays, "partition", self.model,
                        meta={"partition": p, "rows": [int(self.ranges[p]),
                                                       int(self.ranges[p + 1])]})

    def load(self, p):
        """Partition p's rows of every table (checked: its file, its model,
        its rows), counted."""
        arrays = self._read(p)
        self.loads += 1
        self.bytes_loaded += sum(a.nbytes for a in arrays.values())
        return arrays

    def _read(self, p):
        arrays, meta = checkpoint.load(self.path(p), "partition", self.model)
        expected = [int(self.ranges[p]), int(self.ranges[p + 1])]
        if meta.get("partition") != p or meta.get("rows") != expected:
            raise checkpoint.CheckpointError(
                f"{self.path(p)} holds partition {meta.get('partition')} (rows "
                f"{meta.get('rows')}), not partition {p} (rows {expected})")
        for name, array in arrays.items():
            if len(array) != expected[1] - expected[0]:
                raise checkpoint.CheckpointError(
                    f"{self.path(p)}: table '{name}' has {len(array)} rows, the partition "
                    f"{expected[1] - expected[0]}")
        return arrays

    def store(self, p, arrays):
        self._write(p, arrays)
        self.stores += 1
        self.bytes_stored += sum(np.asarray(a).nbytes for a in arrays.values())

    def gather(self):
        """Every table whole (reads every partition, checked but not
        counted; for checks)."""
        parts = [self._read(p) for p in range(len(self.ranges) - 1)]
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def run_schedule(states, buckets, store, train):
    """Trains the buckets of an order state by state: `train(bucket,
    buffer)` with `buffer` {partition: {table: rows}} holding the state's
    partitions; the partition a state drops is written back before the
    one it adds is loaded. Returns the number of buckets trained."""
    if len(buckets) != len(states):
        raise ValueError(f"{len(buckets)} bucket lists for {len(states)} buffer states")
    buffer, trained = {}, 0
    for k, state in enumerate(states):
        for p in [p for p in buffer if p not in state]:
            store.store(p, buffer.pop(p))
        for p in state:
            if p not in buffer:
                buffer[p] = store.load(p)
        for bucket in buckets[k]:
            if not (bucket[0] in buffer and bucket[1] in buffer):
                raise ValueError(f"bucket {bucket} is scheduled in buffer state {k} "
                                 f"{sorted(state)}, which lacks its partitions")
            train(bucket, buffer)
            trained += 1
    for p in list(buffer):
        store.store(p, buffer.pop(p))
    return trained
