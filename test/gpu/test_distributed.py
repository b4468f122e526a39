"""kge.distributed on two or more GPUs of the host (NCCL, one process per
GPU, NVLink multicast off): training with KGE's kernels trains every edge
once per epoch, keeps the relation copies equal and learns; the Gram
matrix over the GPUs is the one-GPU matrix bit for bit; a rank that dies
stops the job, never a hang, leaving a checkpoint that resumes.

Bundles: test/gpu/build_gradient_bundles.py (distmult D32) and the Gram
bundle of bench/bench_distributed.py --prepare in the bundle cache
(KGE_CACHE_DIR), with its molecules (KGE_DISTRIBUTED_DATA, default
.carry/distributed)."""

import json
import os
import pathlib
import sys
import time

import numpy as np
import pytest
import torch

from kge import distributed, training
from test_gradients import BUNDLES

ROOT = pathlib.Path(__file__).resolve().parents[2]
# (appended: the CPU suite's test_distributed must not shadow this module
# in the ranks' processes)
sys.path.append(str(ROOT / "test" / "torch"))
sys.path.append(str(ROOT / "bench"))
from graphs import clustered  # noqa: E402

for key, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                   ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[key] = value

pytestmark = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="fewer than 2 GPUs")
DATA = pathlib.Path(os.environ.get("KGE_DISTRIBUTED_DATA", ROOT / ".carry" / "distributed"))
ENTITIES, RELATIONS, DIM = 3000, 12, 32
TRAIN, TEST, ALL = clustered(0, ENTITIES, RELATIONS, clusters=60, edges=60000, held_out=1000)


def _rank(rank, world, port, out, job, args):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    distributed.init("nccl", timeout=120)
    result = job(rank, *args)
    if rank == 0:
        np.savez(out, **result)
    import torch.distributed as dist
    dist.destroy_process_group()


def spawn(world, job, *args):
    import torch.multiprocessing as mp
    port = distributed.free_port()
    out = pathlib.Path(f"/tmp/kge-gpu-distributed-{os.getpid()}.npz")
    out.unlink(missing_ok=True)
    mp.spawn(_rank, args=(world, port, str(out), job, args), nprocs=world, join=True)
    return np.load(out)


def trainer(directory=None, **options):
    fwd, grad, _ = training.load_bundles(BUNDLES, "distmult", DIM)
    return distributed.DistributedTrainer(
        "distmult", TRAIN, directory, num_entities=ENTITIES, num_relations=RELATIONS, dim=DIM,
        forward=fwd, gradient=grad, batch_size=1024, negatives=16, lr=0.1, **options)


def train_job(rank, epochs, directory=None):
    # (out of core with `directory`: each partition cut in 2, a buffer of 3)
    t = trainer() if directory is None else trainer(out_of_core=directory, split=2)
    for _ in range(epochs):
        t.train_epoch()
    group = distributed.TorchGroup()
    copies = group.all_gather(t.model.tables["Remb"].detach().reshape(-1))
    edges = group.all_gather_object([r["edges"] for r in t.log])
    model = t.gather()
    if rank:
        return None
    metrics, _ = training.evaluate(model, TEST, ALL)
    return {"copies_equal": all(torch.equal(c, copies[0]) for c in copies),
            "edges": np.array(edges), "loss": np.array([r["loss"] for r in t.log]),
            "mrr": metrics["mrr"], "buffer_rows": len(t.model.tables["Eemb"])}


def test_training_on_gpus_trains_every_edge_once_and_learns():
    world = min(4, torch.cuda.device_count())
    got = spawn(world, train_job, 4)
    assert got["copies_equal"]
    assert (got["edges"].sum(axis=0) == len(TRAIN)).all(), got["edges"].sum(axis=0)
    assert got["loss"][-1] < 0.7 * got["loss"][0]
    # Random tables: an MRR of about 2 / 3000.
    assert got["mrr"] > 0.02, got["mrr"]


def test_training_out_of_core_on_gpus_trains_every_edge_once_and_learns(tmp_path):
    """Each rank's partitions in files, cut in 2, a device buffer of 3 of
    them (the swaps overlapped: the copy stream and I/O threads)."""
    world = min(4, torch.cuda.device_count())
    # 8 epochs: on 4 GPUs negatives come from 3 partitions of 188 of the
    # 3,000 entities and learn more slowly (the same settings on the CPU,
    # 4 ranks: MRR 0.010 after 4 epochs, 0.024 after 8).
    got = spawn(world, train_job, 8, str(tmp_path / "live"))
    assert got["copies_equal"]
    assert (got["edges"].sum(axis=0) == len(TRAIN)).all(), got["edges"].sum(axis=0)
    assert int(got["buffer_rows"]) == 3 * -(-ENTITIES // (4 * world)), got["buffer_rows"]
    assert got["loss"][-1] < 0.7 * got["loss"][0], got["loss"]
    assert got["mrr"] > 0.01, got["mrr"]


def gram_job(rank, count):
    from bench_distributed import gram_kernel, molecules
    X = molecules(DATA)[:count]
    return {"gram": distributed.gram(gram_kernel(), X)}


def test_the_gram_matrix_over_gpus_is_the_one_gpu_matrix():
    from bench_distributed import gram_kernel, molecules
    expected = gram_kernel()(molecules(DATA)[:400])
    got = spawn(min(4, torch.cuda.device_count()), gram_job, 400)["gram"]
    assert np.array_equal(got, expected, equal_nan=True)


def die_job(rank, directory):
    def after_round(t, r):
        if rank == 1 and r == 1:
            os._exit(3)

    t = trainer(directory, checkpoint_every=1)
    t.train_epoch(after_round=after_round)
    return {}


def resume_job(rank, directory):
    t = trainer(directory, resume=True)
    start = (t.epoch, t.round)
    t.train_epoch()
    return {"start": np.array(start), "epoch": t.epoch}


def test_a_dying_rank_stops_the_job_and_the_checkpoint_resumes(tmp_path):
    import torch.multiprocessing as mp
    begin = time.monotonic()
    with pytest.raises(mp.ProcessExitedException, match="process 1 terminated with exit code 3"):
        spawn(2, die_job, str(tmp_path))
    assert time.monotonic() - begin < 120
    latest = json.loads((tmp_path / "latest.json").read_text())
    assert (latest["epoch"], latest["round"]) == (0, 2)
    got = spawn(2, resume_job, str(tmp_path))
    assert list(got["start"]) == [0, 2] and int(got["epoch"]) == 1
