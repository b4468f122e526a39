"""Per-kernel times of query 5 (select) through the tensor-core bundles, by
the PyTorch profiler: which kernel the launch plan runs and what it costs."""

import torch, kge_runtime as rt, pathlib
n, K = 8192, 256
g = torch.Generator().manual_seed(0)
scale = (10.0 / (3.7 * K ** 0.5)) ** 0.5
for prec, dt in (("bf16", torch.bfloat16), ("tf32x3", torch.float32)):
    P = (torch.randn(n, K, generator=g) * scale).to(dt).cuda()
    R = (torch.randn(K, n, generator=g) * scale).to(dt).cuda()
    cap = 1 << 20
    rows = torch.empty(cap, dtype=torch.int32, device="cuda"); cols = torch.empty_like(rows)
    vals = torch.empty(cap, device="cuda"); count = torch.zeros(1, dtype=torch.int64, device="cuda")
    q5 = rt.Program(pathlib.Path(f".carry/tile/mma/q5_strong_pairs.{prec}.kgebundle").read_text())
    for _ in range(3): q5(P=P, R=R, C_rows=rows, C_cols=cols, C_values=vals, C_count=count)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(5): q5(P=P, R=R, C_rows=rows, C_cols=cols, C_values=vals, C_count=count)
        torch.cuda.synchronize()
    print(prec, prof.key_averages().table(sort_by="cuda_time_total", row_limit=4))
