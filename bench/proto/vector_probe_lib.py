"""Shared helpers of the probes: timing, and one bundle's call on an
FB15k-like batch."""
import sys
import pathlib

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import datasets  # noqa: E402
from bench_score_functions import make_tables, time_per_call  # noqa: E402
import kge_runtime  # noqa: E402


def fb15k_call(bundle, batch=16384, length=512, seed=0):
    """Loads `bundle` (a .kgebundle path) and draws its inputs: random
    tables of FB15k's sizes and `batch` triples of the FB15k-like graph.
    Returns (program, inputs, generator, (entities, relations))."""
    triples, entities, relations = datasets.fb15k_like()
    triples = torch.from_numpy(triples).cuda()
    g = torch.Generator(device="cuda").manual_seed(seed)
    program = kge_runtime.Program(pathlib.Path(bundle).read_text())
    tables, _ = make_tables(program.signature, entities, relations, length, g)
    s = triples[torch.randint(0, len(triples), (batch,), generator=g, device="cuda")]
    inputs = {**tables, "h": s[:, 0].contiguous(), "r": s[:, 1].contiguous(),
              "t": s[:, 2].contiguous()}
    return program, inputs, g, (entities, relations)


def graph_time(fn, calls=20):
    """GPU time per call of fn(stream): `calls` calls captured in one CUDA
    graph, replayed back to back (no host path)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(calls):
            fn(stream)
    return time_per_call(graph.replay, calls=5)[0] / calls
