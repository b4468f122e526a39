"""Timing helpers of the probes."""
import sys
import pathlib

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from bench_score_functions import time_per_call  # noqa: E402


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
