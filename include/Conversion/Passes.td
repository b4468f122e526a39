//===- Passes.td - KGE conversion passes -------------------*- tablegen -*-===//

#ifndef KGE_CONVERSION_PASSES_TD
#define KGE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertBatchedVectorToTile : Pass<"convert-bvec-to-tile", "ModuleOp"> {
  let summary = "Score every edge against a block of shared negatives: bvec "
                "functions as tile tasks";
  let description = [{
    Rewrites every `bvec.func` into a tile function that scores each edge
    of the batch against every entry of the index array named by
    `shared-negatives` (the corrupted side, N entries shared by all B
    edges, as PyTorch-BigGraph's and Legend's chunked negatives): the
    result `[B, N]` (named as the function's one result) holds, at `(i, j)`,
    the score of edge `i` with its corrupted index replaced by
    `negatives[j]`. The score becomes one matmul-like task (GAMUT): `i`
    runs over the edges, `j` over the negatives, `k` over the embedding;
    rows gathered by the other index arrays are read through them
    (`E[h[i], k]`), those gathered by the negatives as `E[n[j], k]`; the
    elementwise vector expression is the inner computation, the reduction
    over the embedding (`vec_mul_vec`, `reduce sum/max/min`, `norm` p = 1
    or 2) its accumulator, and the scalar operations after it the
    projection. Sums of several reductions combined linearly (SimplE's
    `0.5 * (forward + backward)`, ComplEx's real and imaginary parts) are
    one sum. The task then takes `tile`'s own lowerings (`convert-tile-to-gpu`,
    `convert-tile-to-scf`): its iterators, its tensor cores where the inner
    computation is a product form (a polynomial in the edge's and the
    negative's rows: DistMult, ComplEx, SimplE, CrossE, TransE-L2, TransF;
    f32 tables with `matrix-math=tf32` or `tf32x3`, bf16/f16 tables by
    default), its schedule. A norm's root is taken of the sum clamped at
    zero (multiplied out on tensor cores, the sum of squares can round
    below it).

    Functions that are not one reduction over the embedding are refused
    with the reason: matrix products (`vec_mul_mat`, TransR, RESCAL),
    slices, reductions feeding vectors (TransH), a mean, scalars combined
    non-linearly across several reductions, several results.

    With `matrices` (what `kge-lower-to-gpu` does in positive mode unless
    `fuse-matrix-products`), the functions whose score reduces one matrix
    product per edge become tile functions instead, and the others stay:
    `i` runs over the edges, `k` over the multiplied vector, `j` over the
    projected one; the multiplied vector's elementwise expression times the
    matrix gathered per edge is the inner computation (the matrix a matrix
    per row's key: the segment iterators), the projected side's expression
    the projection (rows read along `j` are pair operands, `R[r[i], j]`),
    the reduction an `output reduce`, the scalar operations after it its
    `finalize`. The tile function keeps the parameters, their dimension
    names (`kge.dims`) and the score as a result (`kge.result`). Left to
    the fused kernel: two or more products, a mean, reductions feeding
    vectors, several results, and half-precision tables whose products
    would take a factor computed from several of them (rounded to half
    precision on the tensor cores) or mix precisions.

    Example (TransR, `matrices`): the task of
    `tile.task`'s second example, with `kge.dims` and `kge.result` on the
    function's arguments.

    Example (DistMult, `shared-negatives=t`):

    ```mlir
    // Before
    bvec.func @distmult(%E: !bvec.table<?x?xf32>, %R: !bvec.table<?x?xf32>,
        %h: !bvec.indices<?xi64>, %r: !bvec.indices<?xi64>,
        %t: !bvec.indices<?xi64>) -> (score: !bvec.scalar<?xf32>) { ... }
    // After
    func.func @distmult(%E: memref<?x?xf32> {kge.param = "E"}, ...,
                        %score: memref<?x?xf32> {kge.param = "score"}) {
      tile.task ins(%E, %R, %E : ...) outs(%score : memref<?x?xf32>)
          gathers(%h, %r, %t : ...) maps [(i, k), (i, k), (j, k)]
          accumulate add output dense {gathered = [[0, 0], [1, 0], [2, 0]]}
          inner { ... a * b * c ... }
      return
    }
    ```
  }];
  let options = [
    Option<"sharedNegatives", "shared-negatives", "std::string",
           /*default=*/"\"\"",
           "index array whose entries replace every edge's (the negatives "
           "shared by the batch)">,
    Option<"matrices", "matrices", "bool", /*default=*/"false",
           "rewrite the functions whose score reduces one matrix product "
           "per edge (TransR, RESCAL) and leave the others">,
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tile::TileIteratorDialect",
  ];
}

def ConvertGraphToTile : Pass<"convert-graph-to-tile", "ModuleOp"> {
  let summary = "Lower graph functions to tile functions: GEMM-like layers as tasks";
  let description = [{
    Rewrites every `func.func` that holds `graph` operations into a tile
    function (destination-passing, memrefs): tensor parameters become
    memrefs of the same shape and name, and each result becomes a last
    parameter marked `kge.result` (the runtime allocates it), so that the
    function takes `tile`'s lowerings (`convert-tile-to-scf` for the CPU,
    `convert-tile-to-gpu` for the GPU) and its signature.

    - A `graph.typed_linear` over the rows of an edge's source or
      destination, by edge type, whose only user is a `graph.aggregate`
      becomes one task with that aggregate (no per-edge tensor is
      materialized): its rows are gathered through the source (or
      destination) indices, its matrix is the edge type's (`W[etype[e],
      k, j]`, a matrix per row's key: segment iterators on the GPU), each
      row is scaled by the edge's weight in the projection, and the output
      operator adds the row into its node (`output aggregate` by the
      `to` end's indices alone).
    - A typed linear layer stored whole (one row per edge or node),
      `graph.linear` (the bias added in its projection) and
      `graph.outer_sum` (a matrix per type: `output per_key`) become their
      own tasks.
    - `arith.addf` of such results writes them into one destination: the
      first task that stores whole writes it, the others add into it (a
      destination only added into starts at zero).
    - Attention: `graph.edge_softmax` becomes three tasks over per-edge
      scalars (each node's largest score as an aggregate by max, the sum
      of exponentials as an aggregate by add, the normalized score), a
      `graph.leaky_relu` of its input applied where the scores are read;
      `graph.inner_product` of a typed linear layer's edge rows (used only
      there) and other rows is one task whose output operator reduces each
      edge's products (`output reduce`); the gradients of the softmax and
      of the leaky ReLU are tasks over per-edge scalars.
    - Intermediates (a value computed in the function and read by a task,
      such as the attention scores) are materialized as further results of
      the tile function, after the function's own: named after the
      operation that computes them (`attention`, `scores`, ...; a
      `kge.name` attribute on the operation names one), with each node's
      largest score and sum beside an edge softmax's (`attention_max`,
      `attention_sum`). The runtime allocates them like any result.

    Forms not lowered are refused with a diagnostic naming the operation:
    a typed linear layer over edge rows by a node's type, attention over
    several heads (scalars other than `[R, 1]`), an edge softmax or leaky
    ReLU as a term of a sum.

    Example:

    ```mlir
    // Before
    %m = graph.typed_linear %g, %x, %w rows(src) by(etype) : ...
    %h = graph.aggregate %g, %m weights(%norm : tensor<?xf32>) to(dst) reduce(sum) : ...
    %s = graph.linear %x, %root : ...
    %o = arith.addf %h, %s : tensor<?x?xf32>
    // After
    tile.task ins(%x, %root : ...) outs(%o : memref<?x?xf32>) ... output dense
    tile.task ins(%x, %w, %norm : ...) keys(%dst : memref<?xi32>)
        outs(%o : memref<?x?xf32>) gathers(%src, %etype : ...) ...
        output aggregate {gathered = [[0, 0], [1, 0]]}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::tile::TileIteratorDialect",
  ];
}

def ConvertKronToGPU : Pass<"convert-kron-to-gpu", "ModuleOp"> {
  let summary = "Lower kron.gram to the GPU solver: one pair per thread block, XMV on the fly";
  let description = [{
    Rewrites every `func.func` whose result is a `kron.gram` over
    `kron.octiles` datasets (run `kron-octile-tiling` first) into a
    `gpu.module` with the bundle description: its signature is the
    function's parameters, two more that the caller derives, and its two
    results (`gram`, `iterations`, `[G_X, G_Y]`).

    - `pairs` (`[P, 3]`, `kge.derived = {function = "pair_schedule", ...}`):
      the pairs to solve as (kind, a, b) — kind 0 a Gram entry, 1 and 2
      the self-kernels of X[a] and Y[b] that normalization divides by
      (the symmetric case takes them from the diagonal and solves each
      unordered pair once) — in decreasing order of cost (product nodes
      times octile pairs), so that the longest solves start first;
    - `workspace` (`[W]` f32, `kge.derived = {function =
      "solver_workspace", blocks, vectors}`): the solver's vectors, `vectors`
      of `n n' + 8` floats for each of the `blocks` resident blocks (r, p,
      A p and the diagonal; T where XMV is factored; the solution x only
      for `kron.nodewise` — K = p_x . x is the sum over the iterations of
      alpha times the sum of p). The 8 floats after p hold zeros that the
      dense octile product reads; a pair whose share of a tighter workspace
      lacks them takes sparse octile pairs only.

    The kernel runs `min(P, blocks)` blocks of 128 threads; each block
    takes the next pair of the schedule from a counter (dynamic load
    balancing) and solves it by conjugate gradient with the diagonal
    preconditioner: the product system's diagonal and right-hand side are
    formed from the node base kernel and the degrees, and the
    off-diagonal part of each matrix-vector product (XMV) is computed on
    the fly from the octiles: the block expands up to `cached-tiles`
    octiles of each graph from their compact form (bitmap and non-zeros)
    into shared memory — once per pair where all of them fit, chunk by
    chunk otherwise — and its warps share them, each taking pairs of
    cached octiles (one of each graph) and accumulating, for each of the
    64 product rows, the edge base kernel times the weights times the
    direction: over the non-zeros of the two rows (the bitmaps' set bits),
    or over all 64 entries where the two octiles' non-zero counts multiply
    to `dense-threshold` or more. The dense product is register blocked: a
    lane takes two product rows that share graph 2's octile row, holds
    that row's weights and labels, reads each row of the octile pair's 8 x
    8 block of p once for both (immediate offsets from one address; the
    solve keeps zeros after p for the reads past its end), and sums each
    row over j2 of ke * w2 p before multiplying by w1; square-exponential
    labels are scaled once so that each pair's kernel is ex2(-(x - y)^2),
    one `ex2.approx.ftz`. A second kernel normalizes the Gram matrix where
    asked.

    Where both graphs have at most 1,024 nodes and their octiles are
    sparse (the product of their mean non-zero counts per octile below
    `rows-density`), XMV runs by product rows instead: each thread computes
    its rows (i, i') of A p whole — the diagonal part and, over the
    non-zeros of row i of graph 1's octiles in tile row i / 8 and of row
    i' of graph 2's, the off-diagonal part — without atomics: an index of
    each graph's tile rows in shared memory, made once per pair, and both
    graphs' compact octiles staged there too where they fit (in the octile
    caches' space; read from global memory otherwise). The rows also give
    each thread its shares of p . A p and of the sum of p, so that CG's
    first reduction needs no pass of its own.

    Where the edge base kernel is a constant c (unlabeled edges), the
    product rows are factored: (A_x o E_x) p = c A P A'^T with P the
    [n, n'] view of p, computed as two sparse products — T = P A'^T, then
    c A T — over each graph's non-zeros once rather than over their pairs
    (always by rows where the tile rows fit: the factored form is cheaper
    for dense octiles too).

    The defaults are the fastest measured on an H100 (bench/proto/
    kron_variants.py, bench/results/2026-11-26-h100-kron and
    2026-11-26-h100-kron-factored): the factored rows 7x faster than the
    plain ones on the BA set, 2.8x on the random geometric set; product rows
    below a density product of 200 (1.3-1.6x faster than octile pairs on
    the synthetic and molecule sets, 1.2x slower on the protein segments,
    whose octiles hold 18 non-zeros on average), 16 cached octiles per
    graph, 8 blocks per SM, and the dense product from a non-zero product
    of 128 (on an H200, bench/results/2026-11-29-h200-kron-dense: the
    protein segments 2.08x faster than with sparse octile pairs only, the
    others within 2 %).

    The dense octile product stays in this kernel rather than in a `tile`
    task (docs/RationaleKron.md says why).
  }];
  let options = [
    Option<"residentBlocks", "blocks", "int64_t", /*default=*/"1024",
           "Blocks resident at once (each solves one pair at a time)">,
    Option<"cachedTiles", "cached-tiles", "int64_t", /*default=*/"16",
           "Octiles of each graph a block keeps expanded in shared memory">,
    Option<"denseThreshold", "dense-threshold", "int64_t", /*default=*/"128",
           "Product of two octiles' non-zero counts from which their product "
           "runs over all 64 entries (dense) rather than over the non-zeros "
           "(above 4096: never)">,
    Option<"productRows", "product-rows", "bool", /*default=*/"true",
           "XMV by product rows where both graphs have at most 1,024 nodes "
           "(each thread its rows, no atomics); false: by octile pairs">,
    Option<"rowsDensity", "rows-density", "int64_t", /*default=*/"200",
           "Product of the two graphs' mean non-zeros per octile below which "
           "a pair takes the product-row primitive (denser: octile pairs)">,
    Option<"minBlocksPerSM", "blocks-per-sm", "int64_t", /*default=*/"8",
           "Blocks each SM must hold at once (nvvm.minctasm: caps the "
           "registers; 0: no cap)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def ConvertBatchedVectorToSCF : Pass<"convert-bvec-to-scf", "ModuleOp"> {
  let summary = "Lower bvec functions to loops over memrefs (the CPU path)";
  let description = [{
    Lowers every `bvec.func` to a `func.func` over memrefs in
    destination-passing style: the arguments are the tables and index
    arrays, followed by one output memref per result. Each operation becomes
    a loop nest over the batch and the item dimensions writing a temporary
    buffer; temporaries are freed before the function returns. The batch
    size is read from the first output.

    The lowered function carries `llvm.emit_c_interface` so that the CPU
    runner can call it through MLIR's ExecutionEngine, and each argument
    carries `kge.param = "<name>"`.

    Example:

    ```mlir
    // Before
    bvec.func @dot(%E: !bvec.table<?x4xf32>, %h: !bvec.indices<?xi64>)
        -> (s: !bvec.scalar<?xf32>) { ... }
    // After
    func.func @dot(%E: memref<?x4xf32>, %h: memref<?xi64>, %s: memref<?xf32>)
        attributes {llvm.emit_c_interface} { ... }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def ConvertTileIteratorToSCF : Pass<"convert-tile-to-scf", "ModuleOp"> {
  let summary = "Lower matmul-like tasks to loops over their memrefs (the CPU path)";
  let description = [{
    Replaces every `tile.task` with a loop nest over `i`, `j` and `k` that
    computes it one pair at a time: the join predicate guards the
    reduction, the inner computation and the accumulator run in the `k`
    loop, and the output operator stores each result (dense stores,
    read-combine-write of aggregate groups, a counter for select and
    distinct, an insertion into the sorted `k` best for top-k). Extents are
    read from the operands with `memref.dim`. This is the reference
    semantics of the dialect that the CPU runner executes and the GPU
    lowering is tested against.

    Example:

    ```mlir
    // Before
    tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
        outs(%C : memref<?x?xf32>) maps [...] accumulate add output dense
        inner { ... }
    // After
    scf.for %i = %c0 to %M step %c1 {
      scf.for %j = %c0 to %N step %c1 {
        %acc = scf.for %k = %c0 to %K step %c1 iter_args(%a = %zero) -> (f32) { ... }
        memref.store %acc, %C[%i, %j] : memref<?x?xf32>
      }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

// The options of the GPU schedule of tile tasks, shared by tile-schedule and
// convert-tile-to-gpu (which schedules the tasks that have no schedule).
defvar TileScheduleOptions = [
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "rows of pairs per thread block (all five 0: choose at launch)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "columns of pairs per thread block">,
    Option<"blockK", "block-k", "int64_t", /*default=*/"0",
           "reduction steps staged in shared memory at a time">,
    Option<"threadM", "thread-m", "int64_t", /*default=*/"0",
           "rows of pairs per thread">,
    Option<"threadN", "thread-n", "int64_t", /*default=*/"0",
           "columns of pairs per thread">,
    Option<"matrixMath", "matrix-math", "std::string", /*default=*/"\"\"",
           "products of f32 operands: fma (CUDA cores), tf32 or tf32x3 "
           "(tensor cores); empty: CUDA cores for f32, tensor cores for "
           "f16 and bf16 (fma: CUDA cores for every type)">,
    Option<"warpgroup", "warpgroup", "bool", /*default=*/"true",
           "16-bit operands on warpgroup MMA (wgmma: sm_90a) when the "
           "grid fills the GPU; false: mma.sync (sm_80 and newer)">,
    Option<"clusterM", "cluster-m", "int64_t", /*default=*/"2",
           "warpgroup MMA: blocks per cluster along M sharing the B tile "
           "by TMA multicast (1, 2 or 4; 1: no cluster)">,
];

def TileSchedule : Pass<"tile-schedule", "ModuleOp"> {
  let summary = "Choose the GPU kernels of every tile task, as tile iterators";
  let description = [{
    Gives the task of every tile function its schedule (the task's
    `schedule` region): the kernels `convert-tile-to-gpu` will emit, each a
    `tile.kernel` with its tiling and its iterators, one `tile.load` per
    input, the compute step (`tile.mma` on tensor cores, `tile.compute` on
    CUDA cores) and the output's `tile.store`. The choices are
    `convert-tile-to-gpu`'s (its description says which kernels and when
    each runs); the options are the same. Tasks that already have a
    schedule keep it, so a schedule can be written or edited by hand
    (another tile shape, fewer kernels, another order) and lowered as it
    stands: `kge-opt -tile-schedule` prints this level, and
    `-convert-tile-to-gpu` of its output gives the same kernels as of the
    input.

    Example (`block-m=64 block-n=64 block-k=16 thread-m=4 thread-n=4`):

    ```mlir
    tile.task ins(%A, %B : memref<?x?xf32>, memref<?x?xf32>)
        outs(%C : memref<?x?xf32>)
        maps [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>]
        accumulate add output dense inner { ... }
        schedule {
      tile.kernel "" block [64, 64, 16] thread [4, 4] {
        %0 = tile.load input 0 dense via shared : !tile.tile<64x16xf32>
        %1 = tile.load input 1 dense via shared : !tile.tile<16x64xf32>
        %2 = tile.compute %0, %1
            : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
        tile.store %2 dense : !tile.tile<64x64xf32>
      }
    }
    ```
  }];
  let options = TileScheduleOptions;
  let dependentDialects = ["::mlir::tile::TileIteratorDialect"];
}

def ConvertTileIteratorToGPU : Pass<"convert-tile-to-gpu", "ModuleOp"> {
  let summary = "Lower each tile function to tiled GPU kernels on tensor cores or CUDA cores";
  let description = [{
    Replaces every tile function (a `func.func` holding `tile.task`s) with
    a `gpu.module` named `<function>_kernels` holding the kernels of every
    task's schedule and a launch plan that runs the tasks in order (the
    first task's kernels named `<function><suffix>`, task n's
    `<function>_t<n><suffix>`, its scratch buffers prefixed `t<n>_`). Each
    task's kernels follow the task's schedule (`tile-schedule`'s, chosen here with the same
    options when the task has none; a task's own schedule is followed as
    written, and the options do not apply to it), each in
    GAMUT's skeleton (Algorithm 1): a thread block computes a
    `block-m` x `block-n` tile of pairs, each thread a `thread-m` x
    `thread-n` sub-tile of the block tile, in runs of four rows and columns
    (read from shared memory as 16-byte vectors). Per `block-k` step the
    load iterators stage the operands indexed by the reduction axis in
    16-byte-aligned shared memory (read along each operand's contiguous
    dimension; the next step's global loads are issued before this step's
    arithmetic), the spatial-only operands are read once into registers,
    and the inner computation and the accumulator run on CUDA cores in
    registers, multiply-adds contracted into FMAs (product tasks: tensor
    cores, below). A join is evaluated
    before the reduction and a block whose pairs it all rejects skips the
    reduction. The store iterators write dense outputs (combining with
    `update`), combine aggregates with atomics, compact a select's pairs
    through a global counter (one atomic per block; the counter is cleared
    by a first kernel of the launch plan), and merge a block's best pairs
    into a top-k output under a lock (the block packs the pairs that beat
    the global k-th and sorts them in shared memory, a short prefix when
    they are few: at most 4096 pairs per block, k at most 512, f32 or i32
    values; a block that finds the lock taken sleeps and re-checks once it
    holds it).

    Without a tile shape, GAMUT's heuristic (scale up before scale out)
    chooses at launch: the module holds a 128 x 128 kernel (8 x 8 pairs per
    thread) and a 64 x 64 one (`<function>_small`, 4 x 4), and the launch
    plan runs the large one when its grid has at least a block per
    multiprocessor (132), the small one otherwise (top-k: the 64 x 64 one
    only). Partially given shapes complete with 64 x 64 x 16 and 4 x 4.

    Tensor cores (without a tile shape): a task whose inner computation is
    the product of an (i, k) and a (j, k) operand, accumulated with add into
    f32, runs its reduction on tensor cores when its operands are f16 or
    bf16 (unless `matrix-math=fma`), or f32 with `matrix-math=tf32` (rounded
    operands) or `tf32x3` (three products of split operands, FP32 accuracy).
    The load iterators copy 16-byte chunks asynchronously (cp.async, a
    pipeline of stages in dynamic shared memory, XOR-swizzled, zero-filled
    past the extents); the products are mma.sync through the `nvgpu`
    dialect (ldmatrix, m16n8k16 or m16n8k8; `<function>_mma`, 128 x 128,
    and `<function>_mma_small`, 64 x 64) or, for 16-bit operands (and tf32
    ones when both are stored k-contiguous, read as stored: their low bits
    dropped) with `warpgroup` (the default), warpgroup MMA
    (`<function>_wgmma`, 128 x 256
    pairs, two consumer warpgroups and a producer warp loading by TMA
    through tensor maps passed as grid constants, full/empty mbarriers,
    wgmma descriptors over 128-byte swizzled tiles, sm_90a) for reductions
    of at least 1024; its blocks run in clusters of `cluster-m` along M
    (tasks without a join), each loading its share of the B tile multicast
    to the cluster, a stage released by the consumers of every block of it
    (whole clusters in the grid). Gathered rows and product forms of
    computed factors (at most three terms) whose operands are all stored
    k-contiguous take warpgroup MMA too, for reductions of at least 128:
    a producer warpgroup's threads read 16-byte chunks of the rows (through
    the index arrays, resolved once), compute each term's factors and write
    them into a stage of their own in the same 128-byte swizzled layout,
    then `fence.proxy.async` and an arrival on the stage's full barrier
    (no clusters, no tensor maps); the launch plan counts its grid as
    filling the GPU from 15/16 of the multiprocessors. The accumulators reach the same store
    iterators; a dense f32 output goes through the freed stages in shared
    memory and leaves in 16-byte row vectors. The
    launch plan runs the largest tensor-core kernel whose grid fills the
    GPU when every operand row is a multiple of 16 bytes (the 64 x 64 one
    otherwise; top-k: the 64 x 64 one only), and a 64 x 64 CUDA-core
    kernel (`<function>_small`) when rows are not.

    Distinct's store iterator inserts every kept value into a hash set in
    global memory (a scratch buffer of twice the capacity's 64-bit slots,
    cleared by the plan; linear probing from a MurmurHash3 mix, empty slots
    claimed by compare-and-swap after a plain read); the thread that claims
    a value's slot takes an output slot from the count. NaNs are one value
    and -0 is +0; the one i64 value that encodes as an empty slot sets the
    set's last word. A count above the capacity means the values did not
    fit (it may then count a value twice); a call with that capacity is
    exact.

    Gathered dimensions (`gathers`) are read through their index arrays
    by the load iterators: CUDA cores, mma.sync copying each 16-byte
    chunk from its gathered row, or warpgroup MMA's producer threads (rows
    stored k-contiguous; a gathered dimension that is an operand's
    contiguous one keeps CUDA cores). An input with
    one matrix per row's key (`W[r[i], k, j]`) takes the segment
    iterators: the launch plan sorts the rows by the key (the device
    library's counting sort, whose scan keeps the run lengths) and cuts
    every key's run into tiles of block-m rows (`kge_key_scan_tiles`; runs
    of 64 rows and more into tiles of 64 for the kernel of long runs, which
    runs beside the other); one block
    per tile and column tile reads its rows through the permutation with
    its key's matrix as the `(k, j)` operand (dense, aggregate and reduce outputs;
    mma.sync tiles of 16 rows x 128 columns for products on tensor cores
    when the rows allow 16-byte copies, CUDA-core tiles of 16 x 128
    otherwise; a tile shape given as options is the segments').

    The module carries the bundle description (`kge.signature`,
    `kge.launch_plan`, ...) like `convert-bvec-to-gpu`'s.
  }];
  let options = TileScheduleOptions;
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

def ConvertBatchedVectorToGPU : Pass<"convert-bvec-to-gpu", "ModuleOp"> {
  let summary = "Lower each planned bvec function to one fused GPU kernel";
  let description = [{
    Replaces every `bvec.func` planned by `bvec-fuse` with a `gpu.module`
    named `<function>_kernels` that holds:

    - one `gpu.func` kernel computing the whole function for a tile of
      edges per thread block (cuKE, Section V): the block loads its edges'
      index arrays into shared memory and calls the runtime inspector
      (`kge_inspect_unique`, `kge_inspect_frequent`) to find each gather's
      unique rows; every stage processes the embedding length chunk by
      chunk, loading each unique row once into a shared-memory buffer when
      rows repeat in the tile (reading the others directly), reducing inner
      products and norms with warp shuffles; `vec_mul_mat` runs over each
      distinct matrix of the tile in frequency order, reusing every matrix
      element for all edges of its run;
    - `llvm.func` declarations of the device-library functions, which
      become `.extern .func` in PTX and are linked by the runtime;
    - attributes describing the bundle: `kge.signature` (the parameters),
      `kge.launch_plan` (the launches of one call: edge reordering by the
      key index array, then the fused kernel, with grids and shared memory
      as expressions of the sizes), `kge.scratch`, `kge.checks` (the index
      range checks of the checked mode) and `kge.mode`.

    With `negative=<index array>`, the kernel scores every positive edge
    against K corrupted ones (cuKE, Fig. 10): the named array has shape
    [B, K], the other index arrays stay [B] and are shared by the K
    negatives of their edge, whose rows the inspector loads once per tile.
  }];
  let options = [
    Option<"negative", "negative", "std::string", /*default=*/"\"\"",
           "index array corrupted in negative-sampling mode (empty: positive "
           "scoring)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect",
  ];
}

#endif // KGE_CONVERSION_PASSES_TD
