"""How fast can any edge order make a batch of 262,144 FB15k-like (or
BioKG-like) edges?
(the 3x `torch.compile` target of the vector models at B = 262,144)

Every edge of TransE/DistMult reads three rows of 2 KB (E[h], R[r], E[t];
ComplEx six: the real and imaginary rows of each). Both KGE and
`torch.compile` read them through L2, so a kernel 3x faster than
`torch.compile` must fetch a third of the rows from L2: the others must be
reused from the SM's own memory (L1 / shared memory, 256 KB per SM), which
needs an order of the edges in which an SM's edges share rows.

`prepare` (any machine, NumPy) draws the batch (with replacement, as the
benchmark does) from the FB15k-like or BioKG-like graph and,
for several orders of its edges, simulates the best case of such reuse: the
order is cut into one contiguous part per SM (132 on an H100), and each SM
keeps the last C rows it read (LRU over whole rows, C = 128 rows = 256 KB,
the SM's entire L1 and shared memory). The rows it must still fetch are its
"miss stream"; the fraction of rows reused is printed per order:

- `batch`: the edges as drawn;
- `head`: sorted by head, KGE's default sort (by the first index array of
  the table gathered most);
- `relation, head`: sorted by relation, then head;
- `hilbert`: along a Hilbert curve over (head, tail) ranked by degree, the
  classic 2-D locality order of SpMM/SDDMM tiling;
- `colder endpoint`: by the endpoint of fewer edges in the batch (so that
  its edges come together while hot endpoints stay cached anyway), then
  the other endpoint.

`measure` (GPU machine) times, with CUDA events, a kernel that only reads
each order's miss stream (the fastest of 1, 2 or 4 blocks of 512 threads
per part, 16-byte loads through L2, four rows in flight per warp, one sum
per block): no index reads, no arithmetic, no output, no sort. Its time is a floor for
any kernel that processes the edges in that order. The same run times
KGE's kernel (`Program.run`, its default layout: sorted by head at this
size) and `torch.compile` on the same batch and tables, and prints
`torch.compile`'s time over each floor: the most any kernel taking that
order could be faster than `torch.compile`.

    python3 bench/proto/reuse_floor_probe.py prepare --out .carry/reuse.npz
    python3 bench/proto/reuse_floor_probe.py measure --misses .carry/reuse.npz \\
        --bundles .carry/bundles
"""
import argparse
import collections
import json
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import datasets  # noqa: E402

SMS, CACHE_ROWS, BATCH, D = 132, 128, 262144, 512
# Rows one gathered index brings: TransE/DistMult one 2 KB row per index,
# ComplEx two (its real and imaginary tables).
MODELS = {"transe_l2": 1, "complex": 2}


def hilbert(x, y, n):
    """Distance along the Hilbert curve of an n x n grid (n a power of two)."""
    x, y, d, s = x.copy(), y.copy(), np.zeros_like(x), n // 2
    while s > 0:
        rx, ry = (x & s) > 0, (y & s) > 0
        d += s * s * ((3 * rx) ^ ry)
        flip = ~ry & rx
        x, y = np.where(flip, s - 1 - x, x), np.where(flip, s - 1 - y, y)
        x, y = np.where(~ry, y, x), np.where(~ry, x, y)
        s //= 2
    return d


def orders(h, r, t, entities):
    count = np.bincount(np.concatenate([h, t]), minlength=entities)
    rank = np.empty(entities, np.int64)
    rank[np.argsort(-count, kind="stable")] = np.arange(entities)
    colder = np.where(count[h] <= count[t], h, t)
    other = np.where(count[h] <= count[t], t, h)
    side = 1 << int(np.ceil(np.log2(entities)))
    return {
        "batch": np.arange(len(h)),
        "head": np.argsort(h, kind="stable"),
        "relation, head": np.lexsort((h, r)),
        "hilbert": np.argsort(hilbert(rank[h], rank[t], side), kind="stable"),
        "colder endpoint": np.lexsort((other, colder)),
    }


def miss_stream(order, h, r, t, entities, relations, per_index, cache_rows):
    """Rows each part must fetch (ids into the concatenated tables: entity
    tables, then relation tables) and the offsets of the parts."""
    rows, offsets = [], [0]
    capacity = max(cache_rows // per_index, 0)
    for part in np.array_split(order, SMS):
        cache = collections.OrderedDict()
        for e in part:
            for key in (int(h[e]), entities + int(r[e]), int(t[e])):
                if key in cache:
                    cache.move_to_end(key)
                    continue
                if capacity:
                    cache[key] = None
                    if len(cache) > capacity:
                        cache.popitem(last=False)
                if key < entities:  # entity rows of each entity table
                    rows.extend(key + k * entities for k in range(per_index))
                else:               # relation rows of each relation table
                    rows.extend(per_index * entities + (key - entities) + k * relations
                                for k in range(per_index))
        offsets.append(len(rows))
    return np.asarray(rows, np.int32), np.asarray(offsets, np.int32)


def prepare(args):
    triples, entities, relations = (datasets.fb15k_like() if args.dataset == "fb15k"
                                    else datasets.biokg_like())
    rng = np.random.default_rng(args.seed)
    batch = triples[rng.integers(0, len(triples), BATCH)]
    h, r, t = (np.ascontiguousarray(batch[:, i]) for i in range(3))
    saved = {"h": h, "r": r, "t": t, "entities": entities, "relations": relations,
             "dataset": args.dataset}
    summary = []
    for name, order in orders(h, r, t, entities).items():
        for model, per_index in MODELS.items():
            for cache in (0, CACHE_ROWS) if name == "batch" else (CACHE_ROWS,):
                rows, offsets = miss_stream(order, h, r, t, entities, relations, per_index, cache)
                key = f"{model}|{name}|{cache}"
                saved[f"rows|{key}"], saved[f"offsets|{key}"] = rows, offsets
                fetched = len(rows) / (3 * per_index * BATCH)
                parts = np.diff(offsets)
                summary.append({"model": model, "order": name, "cache_rows": cache,
                                "rows_fetched": int(len(rows)), "fraction_fetched": fetched,
                                "part_imbalance": float(parts.max() / parts.mean())})
                print(f"{model:10s} {name:16s} cache {cache:3d} rows: "
                      f"{fetched * 3:.3f} of 3 rows per edge fetched "
                      f"(largest part {parts.max() / parts.mean():.2f}x the mean)", flush=True)
    saved["summary"] = json.dumps(summary)
    np.savez_compressed(args.out, **saved)


SOURCE = r"""
// Blocks k * p .. k * p + k - 1 read rows[offsets[p] .. offsets[p + 1]) of T
// (rows of 128 float4), a warp four rows at a time (lane l: float4 l, l + 32,
// l + 64, l + 96), through L2 (ld.global.cg). One sum per block.
extern "C" __global__ void __launch_bounds__(512) missStream(const float4 *__restrict__ T,
                                                             const int *__restrict__ rows,
                                                             const int *__restrict__ offsets,
                                                             int k, float *__restrict__ out) {
  int part = blockIdx.x / k, block = blockIdx.x % k;
  int begin = offsets[part], end = offsets[part + 1];
  int warps = k * (blockDim.x >> 5), warp = block * (blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  float s = 0.f;
  for (int i = begin + 4 * warp; i < end; i += 4 * warps) {
    float4 v[4][4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      int row = rows[min(i + k, end - 1)];
#pragma unroll
      for (int c = 0; c < 4; ++c)
        v[k][c] = __ldcg(T + (size_t)row * 128 + lane + 32 * c);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (i + k < end)
#pragma unroll
        for (int c = 0; c < 4; ++c) s += v[k][c].x + v[k][c].y + v[k][c].z + v[k][c].w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) atomicAdd(out + part, s);
}
"""


def measure(args):
    import cupy as cp
    import torch

    import kge_runtime  # noqa: F401  (the runtime built on the GPU machine)
    from bench_score_functions import TORCH, interleaved_per_call, make_tables

    data = np.load(args.misses)
    summary = json.loads(str(data["summary"]))
    entities, relations = int(data["entities"]), int(data["relations"])
    indices = {k: torch.from_numpy(data[k]).cuda() for k in ("h", "r", "t")}
    kernel = cp.RawModule(code=SOURCE).get_function("missStream")
    out = cp.zeros(SMS, dtype=cp.float32)
    generator = torch.Generator(device="cuda").manual_seed(0)

    def gpu_time(launch, calls=50):
        launch()
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(calls):
            launch()
        end.record()
        end.synchronize()
        return cp.cuda.get_elapsed_time(start, end) * 1e3 / calls

    results = {"device": torch.cuda.get_device_name(), "dataset": str(data["dataset"]),
               "batch": BATCH, "length": D,
               "sms": SMS, "cache_rows": CACHE_ROWS, "entries": []}
    for model, per_index in MODELS.items():
        program = kge_runtime.Program((args.bundles / f"{model}.pos.D{D}.kgebundle").read_text())
        tables, _ = make_tables(program.signature, entities, relations, D, generator)
        inputs = {**tables, **indices}
        ordered = [inputs[p["name"]] for p in program.signature["params"] if p["role"] != "result"]
        compiled = torch.compile(TORCH[model], dynamic=False)
        reference = TORCH[model](**inputs)
        kge_error = ((program.run(*ordered) - reference).norm() / reference.norm()).item()
        compiled(**inputs)
        per_call = interleaved_per_call({"kge": lambda: program.run(*ordered),
                                         "compile": lambda: compiled(**inputs)})
        kge_us, compile_us = per_call["kge"][0], per_call["compile"][0]
        # The concatenated tables, in the order the miss streams number rows:
        # entity tables, then relation tables.
        names = [p["name"] for p in program.signature["params"] if p["role"] == "table"]
        entity_tables = [n for n in names if tables[n].shape[0] == entities]
        relation_tables = [n for n in names if n not in entity_tables]
        T = cp.asarray(torch.cat([tables[n] for n in entity_tables + relation_tables]))
        print(f"{data['dataset']} {model}: KGE {kge_us:.1f} us (error {kge_error:.1e}), torch.compile "
              f"{compile_us:.1f} us, {compile_us / kge_us:.2f}x", flush=True)
        for row in (s for s in summary if s["model"] == model):
            key = f"{model}|{row['order']}|{row['cache_rows']}"
            rows = cp.asarray(data[f"rows|{key}"])
            offsets = cp.asarray(data[f"offsets|{key}"])
            # The fastest of 1, 2 and 4 blocks of 512 threads per part: the
            # stream's rows come from L2 whichever SM reads them.
            us = min(gpu_time(lambda: kernel((SMS * k,), (512,), (T, rows, offsets, cp.int32(k), out)))
                     for k in (1, 2, 4))
            entry = {**row, "floor_us": us, "kge_us": kge_us, "compile_us": compile_us,
                     "kge_relative_error": kge_error,
                     "l2_bytes_per_s": row["rows_fetched"] * D * 4 / (us * 1e-6),
                     "most_x_compile": compile_us / us}
            results["entries"].append(entry)
            print(f"  {row['order']:16s} cache {row['cache_rows']:3d}: "
                  f"{3 * row['fraction_fetched']:.3f} rows per edge, floor {us:7.1f} us "
                  f"({entry['l2_bytes_per_s'] / 1e12:.2f} TB/s), torch.compile / floor "
                  f"{compile_us / us:.2f}x", flush=True)
    args.out.write_text(json.dumps(results, indent=1))


def once(args):
    """KGE and torch.compile on the batch, three calls each, for ncu:
    ncu --metrics lts__t_sectors_srcunit_tex_op_read.sum,... python3 ... once"""
    import torch

    import kge_runtime  # noqa: F401
    from bench_score_functions import TORCH, make_tables

    data = np.load(args.misses)
    entities, relations = int(data["entities"]), int(data["relations"])
    indices = {k: torch.from_numpy(data[k]).cuda() for k in ("h", "r", "t")}
    generator = torch.Generator(device="cuda").manual_seed(0)
    program = kge_runtime.Program((args.bundles / f"{args.model}.pos.D{D}.kgebundle").read_text())
    tables, _ = make_tables(program.signature, entities, relations, D, generator)
    inputs = {**tables, **indices}
    ordered = [inputs[p["name"]] for p in program.signature["params"] if p["role"] != "result"]
    compiled = torch.compile(TORCH[args.model], dynamic=False)
    for _ in range(3):
        program.run(*ordered)
        compiled(**inputs)
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=pathlib.Path, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", choices=["fb15k", "biokg"], default="fb15k")
    m = sub.add_parser("measure")
    m.add_argument("--misses", type=pathlib.Path, required=True)
    m.add_argument("--bundles", type=pathlib.Path, required=True)
    m.add_argument("--out", type=pathlib.Path, required=True)
    o = sub.add_parser("once")
    o.add_argument("--misses", type=pathlib.Path, required=True)
    o.add_argument("--bundles", type=pathlib.Path, required=True)
    o.add_argument("--model", choices=sorted(MODELS), default="transe_l2")
    args = parser.parse_args()
    {"prepare": prepare, "measure": measure, "once": once}[args.command](args)


if __name__ == "__main__":
    main()
