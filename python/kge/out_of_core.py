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
import sys

import numpy as np

from . import checkpoint, partition_order, training


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
        rows = {len(t) for t in tables.values()}
        if rows != {int(ranges[-1])}:
            raise ValueError(f"the tables have {sorted(rows)} rows; the partitions cover "
                             f"{int(ranges[-1])} entities")
        return cls.initialize(directory, ranges, model, lambda p, begin, end: {
            name: t[begin:end] for name, t in tables.items()})

    @classmethod
    def initialize(cls, directory, ranges, model, make):
        """Writes partition p's arrays `make(p, begin, end)` for every p
        (the tables never whole in memory); returns the store."""
        store = cls(directory, ranges, model)
        for p in range(len(ranges) - 1):
            store._write(p, make(p, int(store.ranges[p]), int(store.ranges[p + 1])))
        return store

    def path(self, p):
        return self.directory / f"partition-{p}.kge"

    def _write(self, p, arrays, sync=True):
        checkpoint.save(self.path(p), arrays, "partition", self.model,
                        meta={"partition": p, "rows": [int(self.ranges[p]),
                                                       int(self.ranges[p + 1])]}, sync=sync)

    def read_into(self, p, arrays):
        """Reads partition p into `arrays` ({table: rows} the caller holds,
        e.g. pinned host buffers), checked like load, counted."""
        meta = checkpoint.read_into(self.path(p), "partition", self.model, arrays)
        self._check_meta(p, meta)
        self.loads += 1
        self.bytes_loaded += sum(a.nbytes for a in arrays.values())

    def load(self, p):
        """Partition p's rows of every table (checked: its file, its model,
        its rows), counted."""
        arrays = self._read(p)
        self.loads += 1
        self.bytes_loaded += sum(a.nbytes for a in arrays.values())
        return arrays

    def _read(self, p):
        arrays, meta = checkpoint.load(self.path(p), "partition", self.model)
        expected = self._check_meta(p, meta)
        for name, array in arrays.items():
            if len(array) != expected[1] - expected[0]:
                raise checkpoint.CheckpointError(
                    f"{self.path(p)}: table '{name}' has {len(array)} rows, the partition "
                    f"{expected[1] - expected[0]}")
        return arrays

    def _check_meta(self, p, meta):
        expected = [int(self.ranges[p]), int(self.ranges[p + 1])]
        if meta.get("partition") != p or meta.get("rows") != expected:
            raise checkpoint.CheckpointError(
                f"{self.path(p)} holds partition {meta.get('partition')} (rows "
                f"{meta.get('rows')}), not partition {p} (rows {expected})")
        return expected

    def copy(self, p, target):
        """Partition p's file into the store `target` (of the same
        partitions), atomically, as it is."""
        if not np.array_equal(self.ranges, target.ranges) or self.model != target.model:
            raise ValueError("a partition is copied into a store of the same partitions and "
                             "model")
        checkpoint.write_bytes(target.path(p), self.path(p).read_bytes())

    def store(self, p, arrays, sync=True):
        """Writes partition p (atomically; `sync`: flushed to the device
        before returning), counted."""
        self._write(p, arrays, sync)
        self.stores += 1
        self.bytes_stored += sum(np.asarray(a).nbytes for a in arrays.values())

    def gather(self):
        """Every table whole (reads every partition, checked but not
        counted; for checks)."""
        parts = [self._read(p) for p in range(len(self.ranges) - 1)]
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def run_schedule(states, buckets, store, train):
    """Trains the buckets of an order state by state, synchronously, along
    swap_plan: `train(bucket, buffer)` with `buffer` {partition: {table:
    rows}} holding the state's partitions; a swap writes the evicted
    partition back, then loads the next. Returns the number of buckets
    trained. (OutOfCoreTrainer walks the same plan with the swaps'
    I/O overlapped.)"""
    plan = swap_plan(states, buckets)
    buffer = {p: store.load(p) for p in plan[0][0]}
    trained = 0
    for _, first, evicted, loaded, rest in plan:
        for bucket in first:
            train(bucket, buffer)
        if evicted is not None:
            store.store(evicted, buffer.pop(evicted))
            buffer[loaded] = store.load(loaded)
        for bucket in rest:
            train(bucket, buffer)
        trained += len(first) + len(rest)
    for p in list(buffer):
        store.store(p, buffer.pop(p))
    return trained


def swap_plan(states, buckets):
    """Each buffer state's work in the order the pipeline does it: (state,
    first, evicted, loaded, rest) — `first` the buckets of the partition
    the next swap evicts (trained before it leaves), the swap (None, None
    after the last state), then `rest`, the buckets that train while the
    swap's I/O runs (empty where the order misses Legend's Definition 1)."""
    if len(buckets) != len(states):
        raise ValueError(f"{len(buckets)} bucket lists for {len(states)} buffer states")
    plan = []
    for k, state in enumerate(states):
        evicted = loaded = None
        if k + 1 < len(states):
            (evicted,) = set(state) - set(states[k + 1])
            (loaded,) = set(states[k + 1]) - set(state)
        for bucket in buckets[k]:
            if not (bucket[0] in state and bucket[1] in state):
                raise ValueError(f"bucket {bucket} is scheduled in buffer state {k} "
                                 f"{sorted(state)}, which lacks its partitions")
        # (A bucket may carry a chunk after its two partitions: (a, b, k, m).)
        first = [b for b in buckets[k] if evicted in b[:2]]
        rest = [b for b in buckets[k] if evicted not in b[:2]]
        plan.append((tuple(state), first, evicted, loaded, rest))
    return plan


def buffer_order(n, capacity, order="legend"):
    """The buffer states and buckets of `order` ("legend": Legend's
    Algorithms 1 and 2, a buffer of 3; "beta": Marius's BETA order, any
    capacity, buckets in Algorithm 2's way) for n partitions; one state of
    every partition when they all fit."""
    if not isinstance(capacity, int) or capacity < 2:
        raise ValueError(f"a buffer of {capacity!r} partitions cannot hold the two partitions of "
                         "a bucket: it needs at least 2")
    if order not in ("legend", "beta"):
        raise ValueError(f"unknown partition order {order!r} (expected legend or beta)")
    if capacity >= n:
        states = [tuple(range(n))]
    elif order == "legend":
        if capacity != 3:
            raise ValueError(f"Legend's order is for a buffer of 3 partitions, not {capacity} "
                             "(order='beta' takes any buffer)")
        states = partition_order.legend_order(n)
    else:
        states = partition_order.beta_order(n, capacity)
    if len(states) > 1:
        partition_order.check_order(states, n, capacity)
    return states, partition_order.legend_buckets(states, n)


def _check_counts(**counts):
    for what, value in counts.items():
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{what} must be a positive integer, got {value!r}")


class PartitionedTrainer(training.Trainer):
    """What trainers of partitioned embeddings share (OutOfCoreTrainer,
    kge.distributed.DistributedTrainer): the entity embeddings and their
    optimizer states in a device buffer of `slots` slots, each holding one
    partition's rows (`slot_of`), the relation tables whole; the edges in
    host memory bucketed by (head partition, tail partition), heads and
    tails as rows of their partitions; negatives drawn, uniformly or by
    degree, from the partitions in the buffer (Legend's, Marius's and
    PyTorch-BigGraph's sampling)."""

    def _setup(self, name, triples, *, num_entities, num_relations, dim, partitions, slots,
               forward, gradient, eager, batch_size, negatives, loss, margin, temperature,
               optimizer, lr, sampler, seed, device, buffer_bytes, fingerprint, shuffle=False,
               outer_sum=None, numbering_seed=None):
        """`shuffle`: the entities are numbered in a random order (from
        `numbering_seed`, default `seed`) before the partitions are cut, so
        that partitions of a graph whose ids follow popularity are about
        equally busy; `entity_rows` maps an entity id to its row in that
        order."""
        import torch
        _, distance, kinds = training._spec(name)
        _check_counts(num_entities=num_entities, num_relations=num_relations, dim=dim,
                      partitions=partitions)
        self.ranges = partition_ranges(partitions, num_entities)
        self.capacity = slots
        self.sizes = np.diff(self.ranges).tolist()  # rows of each partition
        self.rows = max(self.sizes)  # rows of a buffer slot
        self.entity_tables = [t for t, kind in kinds.items() if kind == "entity"]
        states = training.RowSparseOptimizer.state_count(optimizer)
        self.partition_bytes = self.rows * dim * 4 * len(self.entity_tables) * (1 + states)
        needed = self.capacity * self.partition_bytes
        if buffer_bytes is not None and buffer_bytes < needed:
            raise ValueError(
                f"a buffer of {buffer_bytes} bytes is smaller than the order needs: "
                f"{self.capacity} partitions of {self.partition_bytes} bytes (embeddings and "
                f"optimizer states of {self.rows} entities) take {needed}")
        device = torch.device(device)
        rows = self.capacity * self.rows
        tables = {}
        generator = torch.Generator(device="cpu").manual_seed(seed)
        for table, kind in kinds.items():
            if kind == "entity":
                tables[table] = torch.nn.Parameter(torch.zeros(rows, dim, device=device))
            else:
                values = training.init_rows(name, table, num_relations, dim, generator)
                tables[table] = torch.nn.Parameter(values.to(device))
        score, op = training._operator(name, forward, gradient, eager, "rows", outer_sum)
        model = training.Model(name, tables, score, distance, op, eager)
        # The optimizer's states of the entity tables are buffer-sized too.
        self._configure(model, batch_size=batch_size, negatives=negatives, loss=loss,
                        margin=margin, temperature=temperature, optimizer=optimizer, lr=lr,
                        sampler=sampler, seed=seed, device=device, rows_only=self.entity_tables)
        self.num_entities, self.dim = num_entities, dim
        triples = training.check_triples(triples, num_entities, num_relations)
        self.entity_rows = self.entity_ids = None
        numbering_seed = seed if numbering_seed is None else numbering_seed
        if shuffle:
            self.entity_ids = np.random.default_rng(numbering_seed).permutation(num_entities)
            self.entity_rows = np.argsort(self.entity_ids)
            triples = triples.copy()
            triples[:, [0, 2]] = self.entity_rows[triples[:, [0, 2]]]
        # The edges bucket by bucket, heads and tails as rows of their
        # partitions.
        permutation, self.offsets = bucket_edges(triples[:, 0], triples[:, 2], self.ranges)
        edges = triples[permutation].copy()
        part_of = np.searchsorted(self.ranges, edges[:, [0, 2]], "right") - 1
        edges[:, [0, 2]] -= self.ranges[part_of]
        self.edges = torch.as_tensor(edges)
        if device.type == "cuda":
            self.edges = self.edges.pin_memory()
        degree = np.bincount(triples[:, [0, 2]].reshape(-1), minlength=num_entities) + 1.0
        self.degree = (torch.as_tensor(degree, device=device) if sampler == "degree"
                       else None)
        self._weights = torch.zeros(rows, dtype=torch.float64, device=device)
        self._cdf = None
        self.fingerprint_config = {"model": name, "dim": dim, "entities": num_entities,
                                   "relations": num_relations, "partitions": partitions,
                                   "optimizer": optimizer, **fingerprint}
        if shuffle:
            self.fingerprint_config["shuffled"] = numbering_seed
        self.slot_of = {}
        self._engine = None  # the swap engine (_io), where partitions live in files

    def fingerprint(self):
        return checkpoint.fingerprint(self.fingerprint_config)

    def _initial_partition(self, name, p, rows, seed):
        import torch
        generator = torch.Generator(device="cpu").manual_seed(seed * 1000003 + p + 1)
        arrays = {}
        for table in self.entity_tables:
            arrays[table] = training.init_rows(name, table, rows, self.dim, generator).numpy()
        for table in self.entity_tables:
            for i in range(len(self.optimizer.state[table])):
                arrays[f"{table}.state{i}"] = np.zeros((rows, self.dim), np.float32)
        return arrays

    def _slot_arrays(self, slot, rows):
        """The buffer's rows of slot `slot` as {file array name: tensor}."""
        begin = slot * self.rows
        views = {}
        for table in self.entity_tables:
            views[table] = self.model.tables[table].data[begin:begin + rows]
        for table in self.entity_tables:
            for i, state in enumerate(self.optimizer.state[table]):
                views[f"{table}.state{i}"] = state[begin:begin + rows]
        return views

    def _assign(self, p, slot, sampled=True):
        """Slot `slot` holds partition p from now on; `sampled`: negatives
        may be drawn from it (not while its rows are being copied)."""
        self.slot_of[p] = slot
        self._sample_from(slot, p if sampled else None)

    def _sample_from(self, slot, p):
        """The sampler's weights of slot `slot`'s rows: 1 or the entity's
        degree for partition p's, 0 for the slot's unused rows (and all of
        them with p None)."""
        weights = self._weights[slot * self.rows:(slot + 1) * self.rows]
        weights.zero_()
        if p is not None:
            begin, end = int(self.ranges[p]), int(self.ranges[p + 1])
            if self.degree is None:
                weights[:end - begin] = 1.0
            else:
                weights[:end - begin] = self.degree[begin:end]
        self._cdf = None

    def corruptions(self, h, t, corrupt_head, k):
        """Negatives drawn from the partitions in the buffer (as Legend and
        Marius do; not the one a swap is moving), uniformly or by degree:
        buffer rows."""
        import torch
        if self._cdf is None:
            # The slots in the order of their partitions: the draws do not
            # depend on which slot a partition happened to land in (a
            # resumed run samples what an uninterrupted one does).
            self._slot_order = torch.tensor([self.slot_of[p] for p in sorted(self.slot_of)],
                                            device=self.device)
            weights = self._weights.view(self.capacity, self.rows)[self._slot_order]
            self._cdf = torch.cumsum(weights.reshape(-1), 0)
        u = torch.rand(len(h), k, device=self.device, generator=self.generator,
                       dtype=torch.float64)
        drawn = torch.searchsorted(self._cdf, u * self._cdf[-1], right=True)
        drawn = torch.clamp_(drawn, max=len(self._cdf) - 1)
        slot = self._slot_order[torch.div(drawn, self.rows, rounding_mode="floor")]
        return slot * self.rows + drawn % self.rows

    def _span(self, bucket):
        """Where the edges of `bucket` ((a, b), or (a, b, k, m): the k-th of
        m equal chunks) lie in self.edges: (begin, end)."""
        a, b = bucket[:2]
        n = len(self.ranges) - 1
        begin, end = int(self.offsets[a * n + b]), int(self.offsets[a * n + b + 1])
        if len(bucket) == 4:
            k, m = bucket[2:]
            begin, end = begin + (end - begin) * k // m, begin + (end - begin) * (k + 1) // m
        return begin, end

    def _group(self, buckets):
        """The edges of `buckets` on the device, heads and tails as buffer
        rows. A bucket is (a, b), or (a, b, k, m): the k-th of m equal
        chunks of bucket (a, b)'s edges."""
        import torch
        parts = []
        for bucket in buckets:
            a, b = bucket[:2]
            begin, end = self._span(bucket)
            if end == begin:
                continue
            edges = self.edges[begin:end].to(self.device, non_blocking=True)
            bias = torch.tensor([self.slot_of[a] * self.rows, 0, self.slot_of[b] * self.rows],
                                device=self.device)
            parts.append(edges + bias)
        if not parts:
            return None
        return torch.cat(parts) if len(parts) > 1 else parts[0]

    def _train_buckets(self, epoch, buckets, bar, check_every):
        edges = self._group(buckets)
        if edges is not None:
            self._train_edges(epoch, edges, bar, check_every)

    def _io_counts(self):
        """This trainer's partition traffic so far: loads and bytes from
        files, bytes to files, and the seconds the host waited for the I/O
        threads (for reads, for writes, in all); an epoch's record holds
        their differences."""
        store, io = self.store, self._io()
        return {"loads": store.loads, "bytes_loaded": store.bytes_loaded,
                "bytes_stored": store.bytes_stored, "host_wait_seconds": io.host_wait,
                "read_wait_seconds": io.waits["read"], "write_wait_seconds": io.waits["write"]}

    def _io(self):
        """The swap engine of self.store (made once)."""
        if self._engine is None:
            self._engine = _SwapEngine(self, overlap=self.prefetch and self.device.type == "cuda")
        return self._engine

    def _walk(self, io, plan, epoch, bar, check_every):
        """Trains the buckets of `plan` (swap_plan's) state by state, the
        swaps done by `io` (a _SwapEngine): overlapped with the buckets
        that do not need the partitions they move."""
        # The I/O threads need the GIL for moments between their pieces:
        # hand it over sooner than every 5 ms while this thread launches.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, 5e-4))
        try:
            io.start(plan)
            for k, (state, first, evicted, loaded, rest) in enumerate(plan):
                if k:
                    io.wait_loaded()
                self._train_buckets(epoch, first, bar, check_every)
                if evicted is not None:
                    # (and the read of the partition the swap after next loads)
                    io.swap(evicted, loaded, plan[k + 1][3] if k + 1 < len(plan) else None)
                self._train_buckets(epoch, rest, bar, check_every)
        finally:
            sys.setswitchinterval(interval)

    def describe(self, batch):
        """Positives as (head, relation, tail) entity ids (the buffer rows
        mapped back)."""
        partition = {slot: p for p, slot in self.slot_of.items()}
        rows = []
        for h, r, t in batch.tolist():
            ids = []
            for row in (h, t):
                p = partition[row // self.rows]
                entity = int(self.ranges[p]) + row % self.rows
                ids.append(entity if self.entity_ids is None else int(self.entity_ids[entity]))
            rows.append((ids[0], r, ids[1]))
        return ", ".join(map(str, rows))


class OutOfCoreTrainer(PartitionedTrainer):
    """Training with the entity embeddings and their optimizer states in
    `partitions` files under `directory` and a device buffer of `capacity`
    partitions (Legend): edges in host memory bucketed by (head partition,
    tail partition), the buffer states of `order` walked along swap_plan,
    relation tables resident on the device.

    On the GPU each swap overlaps the buckets that do not need the
    partitions it moves: a reader thread reads the next partition's file
    into pinned host memory a state ahead; when the evicted partition's
    buckets are done, a copy stream copies its slot to pinned memory and
    the loaded partition into the slot, and a writer thread writes the
    evicted partition's file, while the compute stream trains the state's
    other buckets. The next state waits for its partition only if the copy
    is not done (`stall_seconds`). With `prefetch=False` the swap is done
    synchronously (the ablation). Negatives are drawn, uniformly or by
    degree, from the entities in the buffer (Legend's and Marius's
    sampling). Loads per epoch are the order's I/O count. With `shuffle`
    (the default) the entities are numbered in a random order from `seed`
    before the partitions are cut, as PyTorch-BigGraph assigns them: a
    graph numbered by its own structure (WordNet's synsets in file order)
    would otherwise give partitions of related entities, whose negatives,
    drawn from the buffer, are then related too (WN18-like, DistMult, D =
    128, 20 epochs on an H200: filtered MRR 0.8386 numbered at random,
    0.8332 by the graph's numbering, 0.8425 in memory). `gather` returns
    the tables in the graph's numbering either way.

    Partition files are written atomically (never half); `save` flushes
    them and writes the relation tables, their optimizer state and the
    epoch. A trainer made with `resume=<checkpoint path>` continues from
    them (`resume=True`: from the partition files alone, at epoch 0)."""

    def __init__(self, name, triples, directory, *, num_entities, num_relations, dim, partitions,
                 capacity=3, order="legend", forward=None, gradient=None, eager=False,
                 batch_size=1024, negatives=16, loss="softplus", margin=1.0, temperature=1.0,
                 optimizer="adagrad", lr=0.1, sampler="uniform", seed=0, device="cuda",
                 prefetch=True, buffer_bytes=None, resume=False, outer_sum=None, shuffle=True):
        _check_counts(num_entities=num_entities, partitions=partitions)
        partition_ranges(partitions, num_entities)  # refused before an order is sought
        self.states, self.buckets = buffer_order(partitions, capacity, order)
        # Even epochs walk the order, odd ones walk it backwards: an epoch
        # starts with the buffer the one before left (no loads).
        backwards = self.states[::-1]
        self.plans = (swap_plan(self.states, self.buckets),
                      swap_plan(backwards, partition_order.legend_buckets(backwards, partitions)))
        self.plan = self.plans[0]
        self._setup(name, triples, num_entities=num_entities, num_relations=num_relations,
                    dim=dim, partitions=partitions, slots=len(self.states[0]), forward=forward,
                    gradient=gradient, eager=eager, batch_size=batch_size, negatives=negatives,
                    loss=loss, margin=margin, temperature=temperature, optimizer=optimizer, lr=lr,
                    sampler=sampler, seed=seed, device=device, buffer_bytes=buffer_bytes,
                    fingerprint={}, outer_sum=outer_sum, shuffle=shuffle,
                    # One numbering whatever the seed: a run resumed with
                    # another seed reads the same partition files.
                    numbering_seed=0)
        self.prefetch = prefetch
        if resume is False:
            self.store = PartitionStore.initialize(
                directory, self.ranges, self.fingerprint(),
                lambda p, begin, end: self._initial_partition(name, p, end - begin, seed))
        else:
            self.store = PartitionStore(directory, self.ranges, self.fingerprint())
            self.load(None if resume is True else resume)

    def train_epoch(self, progress=False, check_every=50):
        """One pass over every bucket along the order (backwards in odd
        epochs); returns {epoch, loss, seconds, loads, bytes_loaded,
        bytes_stored, stall_seconds, host_wait_seconds (of which
        read_wait_seconds for reads, write_wait_seconds for writes)}. The
        buffer stays
        loaded after the epoch: flush() (or save, gather) writes it back."""
        epoch = self._begin_epoch()
        counts = self._io_counts()
        bar = self._progress(progress, -(-len(self.edges) // self.batch_size))
        self.plan = self.plans[self.epoch % 2]
        io = self._io()
        self._walk(io, self.plan, epoch, bar, check_every)
        record = self._end_epoch(epoch)
        record.update({k: v - counts[k] for k, v in self._io_counts().items()},
                      stall_seconds=io.stall_seconds())
        return record

    def flush(self):
        """Writes the partitions in the buffer back to their files (they
        stay loaded)."""
        if self._engine is not None:
            self._engine.write_back()

    def close(self):
        """Writes the buffer back and stops the I/O threads; the trainer
        can go on (they start again)."""
        self.flush()
        if self._engine is not None:
            self._engine.close()
            self._engine = None
            self.slot_of.clear()

    def save(self, path):
        """Flushes the partition files to the device and writes the
        relation tables, the optimizer's state and steps, and the epoch to
        `path` (atomically)."""
        import os
        self.flush()
        for p in range(len(self.ranges) - 1):
            with open(self.store.path(p), "rb") as handle:
                os.fsync(handle.fileno())
        relations = [t for t in self.model.tables if t not in self.entity_tables]
        arrays = {t: self.model.tables[t].detach().cpu().numpy() for t in relations}
        states, scalars = self._optimizer_state(relations)
        arrays.update(states)
        arrays["generator"] = self.generator.get_state().numpy()
        return checkpoint.save(path, arrays, "model", self.fingerprint(),
                               {"epoch": self.epoch, "log": self.log, "optimizer": scalars,
                                "partitions": str(self.store.directory)})

    def load(self, path=None):
        """Continues from the checkpoint `path` (from save; default: the
        partition files alone, epoch 0) — refused whole when it or a
        partition file is not this model's."""
        import torch
        for p in range(len(self.ranges) - 1):
            self.store._read(p)
        if path is None:
            return
        arrays, meta = checkpoint.load(path, "model", self.fingerprint())
        relations = [t for t in self.model.tables if t not in self.entity_tables]
        with torch.no_grad():
            for t in relations:
                self.model.tables[t].copy_(torch.as_tensor(arrays[t]))
        self._load_optimizer_state(arrays, meta.get("optimizer", {}), relations)
        self.generator.set_state(torch.as_tensor(arrays["generator"]))
        self.epoch = meta["epoch"]
        self.log = list(meta.get("log", []))

    def gather(self, device=None):
        """The trained model whole (every partition read back, checked):
        a kge.training.Model on `device` (default: the trainer's) with the
        same score, for evaluation when it fits."""
        import torch
        device = self.device if device is None else torch.device(device)
        self.flush()
        arrays = self.store.gather()
        tables = {}
        for name, table in self.model.tables.items():
            values = arrays[name] if name in self.entity_tables else table.detach().cpu()
            if name in self.entity_tables and self.entity_rows is not None:
                values = values[self.entity_rows]  # rows back in the graph's numbering
            tables[name] = torch.nn.Parameter(torch.as_tensor(values).to(device))
        return training.Model(self.model.name, tables, self.model.score, self.model.distance,
                              self.model.operator)


# Pinned host buffers that a swap's evicted partition is copied into while
# its file is written (each a slot's size): a swap waits for the oldest
# write only when all are busy.
WRITE_BUFFERS = 2


class _SwapEngine:
    """The I/O of a trainer's walks of swap plans (an OutOfCoreTrainer's
    epochs, a DistributedTrainer's rounds out of core; `trainer.store`
    holds the partition files): loads of buffer states,
    swaps and write-backs, overlapped with training on the GPU (a copy
    stream, pinned host buffers, a reader and a writer thread) or done
    synchronously."""

    def __init__(self, trainer, overlap):
        self.trainer, self.overlap = trainer, overlap
        self.waits = {"read": 0.0, "write": 0.0}  # seconds the host waited for each
        self.stalls = []
        self.pending = None  # the load event the next state waits for
        if not overlap:
            return
        import concurrent.futures
        import torch
        self.copy = torch.cuda.Stream(device=trainer.device)
        self.reader = concurrent.futures.ThreadPoolExecutor(1, "kge-read")
        self.writer = concurrent.futures.ThreadPoolExecutor(1, "kge-write")
        def staging():
            return {n: torch.empty((trainer.rows,) + tuple(v.shape[1:]), dtype=v.dtype,
                                   pin_memory=True)
                    for n, v in trainer._slot_arrays(0, trainer.rows).items()}

        self.inbound = [staging(), staging()]
        self.outbound = [staging() for _ in range(max(1, WRITE_BUFFERS))]
        self.copied_in = [None, None]  # H2D done: the inbound buffer is free
        self.written = [None] * len(self.outbound)  # file written: the buffer is free
        self.writes_started = 0
        self.reads = {}  # partition: (future, inbound index)
        self.read_count = 0

    def _views(self, buffers, p):
        return {n: b[:self.trainer.sizes[p]] for n, b in buffers.items()}

    def _numpy(self, views):
        return {n: v.numpy() for n, v in views.items()}

    def _host(self, views):
        """Host arrays of buffer views: the views themselves on the CPU,
        copies from the GPU (the synchronous ways)."""
        if self.trainer.device.type == "cpu":
            return self._numpy(views)
        return {n: v.cpu().numpy() for n, v in views.items()}

    def _read_now(self, p, views):
        """Partition p's file into the buffer views, synchronously."""
        if self.trainer.device.type == "cpu":
            self.trainer.store.read_into(p, self._numpy(views))
            return
        arrays = self.trainer.store.load(p)
        for n, v in views.items():
            v.copy_(_tensor(arrays[n]))

    def start(self, plan):
        """Before a walk of `plan`: the buffer holds its first state (the
        partitions it held that the state lacks written back and dropped,
        the missing ones loaded) and the first swap's partition is being
        read."""
        trainer = self.trainer
        state = plan[0][0]
        self.write_back([p for p in trainer.slot_of if p not in state], drop=True)
        self.load_state([p for p in state if p not in trainer.slot_of])
        if self.overlap:
            self._read_ahead(plan[0][3])

    def load_state(self, partitions):
        """Loads `partitions` into free slots (in slot order)."""
        trainer = self.trainer
        free = sorted(set(range(trainer.capacity)) - set(trainer.slot_of.values()))
        if len(partitions) > len(free):
            raise ValueError(f"no room for partitions {list(partitions)}: the buffer has "
                             f"{len(free)} free slots of {trainer.capacity} (holding "
                             f"{sorted(trainer.slot_of)})")
        for slot, p in zip(free, partitions):
            views = trainer._slot_arrays(slot, trainer.sizes[p])
            if self.overlap:
                staged = self._views(self.inbound[0], p)
                if self.copied_in[0] is not None:
                    self.copied_in[0].synchronize()
                trainer.store.read_into(p, self._numpy(staged))
                for n, v in views.items():
                    v.copy_(staged[n])
            else:
                self._read_now(p, views)
            trainer._assign(p, slot)

    def _read_ahead(self, p):
        if p is None or p in self.reads:
            return
        index = self.read_count % 2
        self.read_count += 1
        after = self.copied_in[index]

        def read():
            if after is not None:
                after.synchronize()
            self.trainer.store.read_into(p, self._numpy(self._views(self.inbound[index], p)))

        self.reads[p] = (self.reader.submit(read), index)

    def swap(self, evicted, loaded, read_next):
        """Evicted out of its slot and back to its file, `loaded` into it;
        then the read of `read_next` starts."""
        trainer = self.trainer
        slot = trainer.slot_of.pop(evicted)
        rows_out, rows_in = trainer.sizes[evicted], trainer.sizes[loaded]
        if not self.overlap:
            trainer.store.store(evicted, self._host(trainer._slot_arrays(slot, rows_out)),
                                sync=False)
            self._read_now(loaded, trainer._slot_arrays(slot, rows_in))
            trainer._assign(loaded, slot, sampled=False)
            self.pending = (None, loaded, slot)
            return
        import torch
        out = self._outbound()
        trained = torch.cuda.Event()
        trained.record(torch.cuda.current_stream(trainer.device))
        staged_out = self._views(self.outbound[out], evicted)
        with torch.cuda.stream(self.copy):
            self.copy.wait_event(trained)
            for n, v in trainer._slot_arrays(slot, rows_out).items():
                staged_out[n].copy_(v, non_blocking=True)
            copied_out = torch.cuda.Event()
            copied_out.record(self.copy)

        def write():
            copied_out.synchronize()
            trainer.store.store(evicted, self._numpy(staged_out), sync=False)

        self.written[out] = self.writer.submit(write)
        trainer._sample_from(slot, None)
        self._read_ahead(loaded)
        future, index = self.reads.pop(loaded)
        self._wait(future, "read")
        staged_in = self._views(self.inbound[index], loaded)
        with torch.cuda.stream(self.copy):
            for n, v in trainer._slot_arrays(slot, rows_in).items():
                v.copy_(staged_in[n], non_blocking=True)
            copied_in = torch.cuda.Event()
            copied_in.record(self.copy)
        self.copied_in[index] = copied_in
        self.pending = (copied_in, loaded, slot)
        trainer._assign(loaded, slot, sampled=False)
        self._read_ahead(read_next)

    def _outbound(self):
        """The next outbound buffer in turn, once its write is done."""
        out = self.writes_started % len(self.outbound)
        self.writes_started += 1
        if self.written[out] is not None:
            self._wait(self.written[out], "write")
        return out

    @property
    def host_wait(self):
        """Seconds the host waited for the I/O threads, reads and writes."""
        return self.waits["read"] + self.waits["write"]

    def _wait(self, future, kind):
        import time
        start = time.perf_counter()
        future.result()
        self.waits[kind] += time.perf_counter() - start

    def wait_loaded(self):
        """The compute stream waits for the last swap's load (timed)."""
        if self.pending is None:
            return
        event, p, slot = self.pending
        if event is not None:
            import torch
            stream = torch.cuda.current_stream(self.trainer.device)
            before = torch.cuda.Event(enable_timing=True)
            after = torch.cuda.Event(enable_timing=True)
            before.record(stream)
            stream.wait_event(event)
            after.record(stream)
            self.stalls.append((before, after))
        # The same in both ways: negatives come from the loaded partition
        # from the next state on.
        self.trainer._sample_from(slot, p)
        self.pending = None

    def write_back(self, partitions=None, drop=False, wait=True):
        """The partitions in the buffer (`partitions` of them; default all)
        back to their files (on the GPU the copy of one overlapping the
        write of the one before); they stay in the buffer unless `drop`.
        `wait=False`: returns once they are copied out of the buffer, the
        writes going on (wait_writes)."""
        trainer = self.trainer
        if partitions is None:
            partitions = list(trainer.slot_of)
        if self.overlap and partitions:
            import torch
            torch.cuda.current_stream(trainer.device).synchronize()
        for p in sorted(partitions):
            slot = trainer.slot_of[p]
            views = trainer._slot_arrays(slot, trainer.sizes[p])
            if not self.overlap:
                trainer.store.store(p, self._host(views), sync=False)
                continue
            out = self._outbound()
            staged = self._views(self.outbound[out], p)
            for n, v in views.items():
                staged[n].copy_(v)
            self.written[out] = self.writer.submit(
                trainer.store.store, p, self._numpy(staged), sync=False)
        if wait:
            self.wait_writes()
        if drop:
            for p in partitions:
                trainer._sample_from(trainer.slot_of.pop(p), None)

    def wait_writes(self):
        """Returns when every write started is done."""
        if self.overlap:
            for future in self.written:
                if future is not None:
                    self._wait(future, "write")

    def stall_seconds(self):
        """Time the compute stream waited for loads since the last call."""
        if not self.stalls:
            return 0.0
        import torch
        torch.cuda.synchronize(self.trainer.device)
        seconds = sum(b.elapsed_time(a) for b, a in self.stalls) / 1e3
        self.stalls = []
        return seconds

    def close(self):
        """Stops the I/O threads (after their work)."""
        if self.overlap:
            self.reader.shutdown(wait=True)
            self.writer.shutdown(wait=True)


def _tensor(array):
    import torch
    return torch.as_tensor(array)
