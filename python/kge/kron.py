"""The marginalized graph kernel (Kashima et al.; Tang et al., "A
High-Throughput Solver for Marginalized Graph Kernels on GPU"), as the
NumPy reference the `kron` dialect's kernels are tested against.

Between two labeled, weighted, undirected graphs G and G' the kernel is

    K(G, G') = p_x^T (D_x V_x^-1 - A_x o E_x)^-1 D_x q_x

over their product graph: p_x = p (x) p' the starting probabilities, q_x =
q (x) q' the stopping probabilities, A_x = A (x) A' the adjacency, D_x =
diag(d (x) d') with d_i = sum_j A_ij + q_i, V_x = diag(kv(v_i, v'_i')) the
node base kernel, E_x[ii', jj'] = ke(e_ij, e'_i'j') the edge base kernel
(generalized Kronecker products). The system is symmetric positive definite
when the base kernels are positive definite with node values in (0, 1] and
edge values in [0, 1].

Two solvers, both in float64:

- `dense_kernel` forms the product system (n n' x n n') and solves it
  directly: the ground truth, for small graphs;
- `solve` never forms it: the product's matrix-vector multiplication (XMV)
  runs over the two graphs' edges on the fly, inside a conjugate-gradient
  solve with the diagonal preconditioner (D_x V_x^-1), as the paper's
  Algorithm 1 does — the algorithm the dialect lowers to the GPU.

`gram` gives the Gram matrix of a dataset (all pairs, or X against Y),
optionally normalized to K(G, G') / sqrt(K(G, G) K(G', G')).
"""

import dataclasses
import math

import numpy as np

from . import cache as _cache


# ---------------------------------------------------------------------------
# Labeled graphs
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class LabeledGraph:
    """An undirected graph of n nodes: `adjacency` [n, n] (symmetric,
    non-negative weights, zero diagonal), `node_labels` {feature: [n]}
    and `edge_labels` {feature: [n, n]} (symmetric; read where the
    adjacency is non-zero). Construction checks all of it."""
    adjacency: np.ndarray
    node_labels: dict = dataclasses.field(default_factory=dict)
    edge_labels: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        a = np.asarray(self.adjacency, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(f"the adjacency must be a square matrix, got shape {a.shape}")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError("the adjacency holds negative or non-finite weights")
        if not np.allclose(a, a.T):
            raise ValueError("the adjacency is not symmetric (an undirected graph)")
        if np.any(np.diag(a) != 0):
            raise ValueError("the adjacency has self-loops (non-zero diagonal)")
        n = a.shape[0]
        self.adjacency = a
        self.node_labels = {k: np.asarray(v) for k, v in self.node_labels.items()}
        self.edge_labels = {k: np.asarray(v) for k, v in self.edge_labels.items()}
        for name, labels in self.node_labels.items():
            if labels.shape != (n,):
                raise ValueError(f"node label '{name}' must hold one value per node ({n}), "
                                 f"got shape {labels.shape}")
        for name, labels in self.edge_labels.items():
            if labels.shape != (n, n):
                raise ValueError(f"edge label '{name}' must be [{n}, {n}], got shape "
                                 f"{labels.shape}")
            edges = a > 0
            if not np.array_equal(labels[edges], labels.T[edges]):
                raise ValueError(f"edge label '{name}' is not symmetric on the edges")

    @property
    def num_nodes(self):
        return self.adjacency.shape[0]

    @classmethod
    def from_edges(cls, num_nodes, edges, weights=None, node_labels=None, edge_labels=None):
        """A graph from undirected edges (pairs (i, j)), their weights (1 by
        default) and per-edge labels {feature: [E]}."""
        edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
            raise IndexError(f"an edge names a node outside [0, {num_nodes})")
        weights = np.ones(len(edges)) if weights is None else np.asarray(weights, float)
        a = np.zeros((num_nodes, num_nodes))
        a[edges[:, 0], edges[:, 1]] = weights
        a[edges[:, 1], edges[:, 0]] = weights
        labels = {}
        for name, values in (edge_labels or {}).items():
            values = np.asarray(values)
            m = np.zeros((num_nodes, num_nodes), dtype=values.dtype)
            m[edges[:, 0], edges[:, 1]] = values
            m[edges[:, 1], edges[:, 0]] = values
            labels[name] = m
        return cls(a, dict(node_labels or {}), labels)


# ---------------------------------------------------------------------------
# Base kernels
# ---------------------------------------------------------------------------

class KroneckerDelta:
    """1 where the labels are equal, `h` elsewhere (0 < h <= 1)."""

    def __init__(self, h):
        if not 0 < h <= 1:
            raise ValueError(f"KroneckerDelta's off-diagonal value must be in (0, 1], got {h}")
        self.h = float(h)

    def __call__(self, x, y):
        return np.where(np.asarray(x) == np.asarray(y), 1.0, self.h)


class SquareExponential:
    """exp(-(x - y)^2 / (2 length_scale^2)) of numeric labels."""

    def __init__(self, length_scale):
        if not length_scale > 0:
            raise ValueError(f"SquareExponential's length scale must be positive, got "
                             f"{length_scale}")
        self.length_scale = float(length_scale)

    def __call__(self, x, y):
        d = np.asarray(x, float) - np.asarray(y, float)
        return np.exp(-d * d / (2 * self.length_scale ** 2))


class Constant:
    """c everywhere (0 < c <= 1): an unlabeled graph's base kernel."""

    def __init__(self, c=1.0):
        if not 0 < c <= 1:
            raise ValueError(f"Constant must be in (0, 1], got {c}")
        self.c = float(c)

    def __call__(self, x, y):
        return np.full(np.broadcast(np.asarray(x), np.asarray(y)).shape, self.c)


class TensorProduct:
    """The product of base kernels over label features: TensorProduct(
    element=KroneckerDelta(0.5), charge=SquareExponential(1.0))."""

    def __init__(self, **features):
        if not features:
            raise ValueError("TensorProduct takes at least one feature's kernel")
        self.features = features

    def __call__(self, x, y):
        out = 1.0
        for name, kernel in self.features.items():
            out = out * kernel(x[name], y[name])
        return out


def _labels(labels, kernel, where):
    """The labels a kernel reads: the dict for a TensorProduct or an
    Additive, the first (only) feature otherwise (none: unlabeled, for
    Constant)."""
    if isinstance(kernel, (TensorProduct, Additive)):
        missing = set(kernel.features) - set(labels)
        if missing:
            raise KeyError(f"the {where} kernel reads feature(s) "
                           f"{', '.join(sorted(missing))}, which the graph lacks")
        return labels
    if isinstance(kernel, Constant):
        return None
    if len(labels) != 1:
        raise ValueError(f"the {where} kernel reads one label feature; the graph has "
                         f"{len(labels)}: use TensorProduct(feature=kernel, ...)")
    return next(iter(labels.values()))


def _node_kernel(g1, g2, kernel):
    """kv(v_i, v'_i') as [n, n']."""
    a, b = _labels(g1.node_labels, kernel, "node"), _labels(g2.node_labels, kernel, "node")
    if a is None:
        return np.full((g1.num_nodes, g2.num_nodes), kernel.c)
    if isinstance(a, dict):
        a = {k: v[:, None] for k, v in a.items()}
        return np.broadcast_to(kernel(a, b), (g1.num_nodes, g2.num_nodes))
    return kernel(a[:, None], b[None, :])


def _edge_kernel(g1, g2, kernel, i, j, k, l):
    """ke(e_ij, e'_kl) for the edge lists (i, j) of g1 and (k, l) of g2,
    as [len(i), len(k)]."""
    a, b = _labels(g1.edge_labels, kernel, "edge"), _labels(g2.edge_labels, kernel, "edge")
    if a is None:
        return np.full((len(i), len(k)), kernel.c)
    if isinstance(a, dict):
        return kernel({n: v[i, j][:, None] for n, v in a.items()},
                      {n: v[k, l][None, :] for n, v in b.items()})
    return kernel(a[i, j][:, None], b[k, l][None, :])


# ---------------------------------------------------------------------------
# The product system
# ---------------------------------------------------------------------------

@dataclasses.dataclass
class _System:
    """The product system of a pair, kept factored: its diagonal (D_x
    V_x^-1 as [n, n']), right-hand side D_x q_x and starting probabilities
    (as [n, n']), and the off-diagonal weights per pair of edges."""
    diagonal: np.ndarray
    rhs: np.ndarray
    start: np.ndarray
    edges1: tuple
    edges2: tuple
    weights: np.ndarray  # A_ij A'_kl ke(e_ij, e'_kl), [E1, E2] (directed edges)


def _probabilities(g, q, p):
    n = g.num_nodes
    q = np.full(n, float(q)) if np.ndim(q) == 0 else np.asarray(q, float)
    if q.shape != (n,) or np.any(q <= 0) or np.any(q > 1):
        raise ValueError(f"the stopping probability must be in (0, 1] per node, got {q}")
    p = np.full(n, 1.0 / n) if p is None else np.asarray(p, float)
    if p.shape != (n,) or np.any(p < 0):
        raise ValueError("the starting probability must be non-negative, one per node")
    return q, p


#: The conventions of the product system's degrees (kron.gram's `degrees`).
DEGREES = ("additive", "scaled")


def _check_degrees(degrees):
    if degrees not in DEGREES:
        raise ValueError(f"the degrees are 'additive' or 'scaled', not {degrees!r}")


def degree(sums, q, degrees="additive"):
    """The degrees d of D_x from the nodes' sums of edge weights: `additive`
    (the solver paper's) d = sum + q; `scaled` (Kashima's transition
    probabilities (1 - q) A_ij / sum_j A_ij, GraphDot's) d = sum / (1 - q),
    an edgeless node counting as of degree 1."""
    _check_degrees(degrees)
    sums = np.asarray(sums, np.float64)
    if degrees == "additive":
        return sums + q
    return np.where(sums == 0, 1.0, sums) / (1 - q)


def _system(g1, g2, node_kernel, edge_kernel, q, p, degrees="additive"):
    if g1.num_nodes == 0 or g2.num_nodes == 0:
        raise ValueError("the marginalized kernel needs graphs of at least one node")
    q1, p1 = _probabilities(g1, q, p)
    q2, p2 = _probabilities(g2, q, p)
    d1 = degree(g1.adjacency.sum(1), q1, degrees)
    d2 = degree(g2.adjacency.sum(1), q2, degrees)
    v = _node_kernel(g1, g2, node_kernel)
    if np.any(v <= 0) or np.any(v > 1):
        raise ValueError("the node kernel must lie in (0, 1]")
    d = np.outer(d1, d2)
    i, j = np.nonzero(g1.adjacency)
    k, l = np.nonzero(g2.adjacency)
    ke = _edge_kernel(g1, g2, edge_kernel, i, j, k, l)
    if np.any(ke < 0) or np.any(ke > 1):
        raise ValueError("the edge kernel must lie in [0, 1]")
    weights = g1.adjacency[i, j][:, None] * g2.adjacency[k, l][None, :] * ke
    return _System(d / v, d * np.outer(q1, q2), np.outer(p1, p2), (i, j), (k, l), weights)


def xmv(system, x):
    """(D_x V_x^-1 - A_x o E_x) x, x as [n, n'], without forming the
    product: each pair of edges (i, j) of G and (k, l) of G' moves
    A_ij A'_kl ke(e_ij, e'_kl) x[j, l] into y[i, k]."""
    (i, j), (k, l) = system.edges1, system.edges2
    y = system.diagonal * x
    # sum over the pairs of edges: y[i, k] -= w[e1, e2] x[j, l].
    contrib = system.weights * x[j][:, l]
    np.subtract.at(y, (i[:, None], k[None, :]), contrib)
    return y


def solve(g1, g2, node_kernel, edge_kernel, q=0.05, p=None, tol=1e-10, maxiter=None,
          degrees="additive"):
    """The product system's solution x ([n, n']) by conjugate gradient with
    the diagonal preconditioner, XMV on the fly; with the number of
    iterations. Raises RuntimeError when it has not converged (relative
    residual `tol`) within `maxiter` (default 10 n n') iterations.
    `degrees` is the convention of D_x (see `degree`)."""
    return _conjugate_gradient(_system(g1, g2, node_kernel, edge_kernel, q, p, degrees),
                               tol, maxiter)


def _conjugate_gradient(s, tol, maxiter):
    """solve's iteration on the product system `s`."""
    b = s.rhs
    x = np.zeros_like(b)
    r = b.copy()
    z = r / s.diagonal
    d = z.copy()
    rz = float((r * z).sum())
    norm_b = math.sqrt(float((b * b).sum()))
    maxiter = maxiter if maxiter is not None else 10 * b.size
    for iteration in range(1, maxiter + 1):
        ad = xmv(s, d)
        alpha = rz / float((d * ad).sum())
        x += alpha * d
        r -= alpha * ad
        if math.sqrt(float((r * r).sum())) <= tol * norm_b:
            return x, iteration
        z = r / s.diagonal
        rz_next = float((r * z).sum())
        d = z + (rz_next / rz) * d
        rz = rz_next
    raise RuntimeError(f"the conjugate gradient did not converge in {maxiter} iterations "
                       f"(relative residual {math.sqrt(float((r * r).sum())) / norm_b:.2e} > "
                       f"{tol:g})")


def kernel(g1, g2, node_kernel, edge_kernel, q=0.05, p=None, tol=1e-10, maxiter=None,
           degrees="additive"):
    """K(G, G') = p_x . x, x solved by `solve`."""
    s = _system(g1, g2, node_kernel, edge_kernel, q, p, degrees)
    x, _ = _conjugate_gradient(s, tol, maxiter)
    return float((s.start * x).sum())


def nodewise(g1, g2, node_kernel, edge_kernel, q=0.05, tol=1e-10, maxiter=None,
             degrees="additive"):
    """The node-wise similarity [n, n']: x itself, the expected similarity
    of the walks that start at each pair of nodes (K = p_x . x weighs it
    by the starting probabilities)."""
    x, _ = solve(g1, g2, node_kernel, edge_kernel, q, None, tol, maxiter, degrees)
    return x


def dense_kernel(g1, g2, node_kernel, edge_kernel, q=0.05, p=None, degrees="additive"):
    """K(G, G') from the formed product system, solved directly (float64):
    the ground truth for small graphs."""
    s = _system(g1, g2, node_kernel, edge_kernel, q, p, degrees)
    n1, n2 = s.diagonal.shape
    m = np.diag(s.diagonal.ravel())
    (i, j), (k, l) = s.edges1, s.edges2
    rows = (i[:, None] * n2 + k[None, :]).ravel()
    cols = (j[:, None] * n2 + l[None, :]).ravel()
    np.subtract.at(m, (rows, cols), s.weights.ravel())
    x = np.linalg.solve(m, s.rhs.ravel())
    return float(s.start.ravel() @ x)


def gram(X, Y=None, node_kernel=None, edge_kernel=None, q=0.05, normalize=False,
         tol=1e-10, maxiter=None, degrees="additive"):
    """The Gram matrix [len(X), len(Y)] (Y = X by default: symmetric, each
    pair solved once), normalized to K / sqrt(K(G, G) K(G', G')) with
    `normalize`."""
    if node_kernel is None or edge_kernel is None:
        raise ValueError("gram needs a node and an edge base kernel")
    symmetric = Y is None
    Y = X if symmetric else Y
    k = np.zeros((len(X), len(Y)))
    for a, g in enumerate(X):
        for b, h in enumerate(Y):
            if symmetric and b < a:
                k[a, b] = k[b, a]
                continue
            k[a, b] = kernel(g, h, node_kernel, edge_kernel, q, None, tol, maxiter, degrees)
    if normalize:
        dx = np.array([kernel(g, g, node_kernel, edge_kernel, q, None, tol, maxiter, degrees)
                       for g in X]) if not symmetric else np.diag(k).copy()
        dy = dx if symmetric else np.array(
            [kernel(h, h, node_kernel, edge_kernel, q, None, tol, maxiter, degrees)
             for h in Y])
        k = k / np.sqrt(np.outer(dx, dy))
    return k


# ---------------------------------------------------------------------------
# Layout: octiles and reordering (the reference of the dialect's passes)
# ---------------------------------------------------------------------------

#: The side of the square tiles the solver streams (the paper's octiles).
OCTILE = 8


@dataclasses.dataclass
class Octiles:
    """A graph's adjacency (and edge labels) as its non-empty 8 x 8 tiles
    in coordinate order, each compact: a 64-bit bitmap whose bit r * 8 + c
    marks a non-zero at (r, c) of the tile, and the non-zeros' weights and
    labels in bit order. `order` is the node order the tiles are cut from
    (node `order[k]` is row k)."""
    num_nodes: int
    order: np.ndarray
    coords: np.ndarray      # [T, 2] tile row, tile column
    bitmaps: np.ndarray     # [T] uint64
    offsets: np.ndarray     # [T + 1] start of each tile's non-zeros
    weights: np.ndarray     # [nnz]
    labels: dict            # {feature: [nnz]}

    @property
    def nonzeros(self):
        """Each tile's non-zero count (the bitmap's popcount)."""
        return np.diff(self.offsets)

    def to_dense(self):
        """The adjacency in the graph's own node order."""
        n = self.num_nodes
        a = np.zeros((n, n))
        for t, (ti, tj) in enumerate(self.coords):
            rows, cols = _bits(int(self.bitmaps[t]))
            a[self.order[ti * OCTILE + rows], self.order[tj * OCTILE + cols]] = \
                self.weights[self.offsets[t]:self.offsets[t + 1]]
        return a


def _bits(bitmap):
    """The (rows, cols) of a tile's set bits, in bit order."""
    bits = np.nonzero([(bitmap >> b) & 1 for b in range(OCTILE * OCTILE)])[0]
    return bits // OCTILE, bits % OCTILE


def octiles(g, order=None):
    """`g`'s octiles in the node order `order` (a permutation; the natural
    order by default): empty tiles are not stored."""
    n = g.num_nodes
    order = np.arange(n) if order is None else np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError(f"the order must be a permutation of the {n} nodes")
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    i, j = np.nonzero(g.adjacency)
    pi, pj = position[i], position[j]
    tile = (pi // OCTILE) * ((n + OCTILE - 1) // OCTILE) + pj // OCTILE
    bit = (pi % OCTILE) * OCTILE + pj % OCTILE
    key = np.lexsort((bit, tile))
    tile, bit, i, j = tile[key], bit[key], i[key], j[key]
    tiles, starts = np.unique(tile, return_index=True)
    per_row = (n + OCTILE - 1) // OCTILE
    bitmaps = np.zeros(len(tiles), dtype=np.uint64)
    for t, (s, e) in enumerate(zip(starts, list(starts[1:]) + [len(tile)])):
        for b in bit[s:e]:
            bitmaps[t] |= np.uint64(1) << np.uint64(b)
    return Octiles(n, order, np.stack([tiles // per_row, tiles % per_row], 1).reshape(-1, 2),
                   bitmaps, np.append(starts, len(tile)).astype(np.int64),
                   g.adjacency[i, j], {k: v[i, j] for k, v in g.edge_labels.items()})


def rcm_order(g):
    """The reverse Cuthill-McKee order of `g`'s nodes: breadth-first from a
    node of least degree in each connected component, neighbours by
    increasing degree, reversed (bandwidth reduction: fewer, denser
    octiles)."""
    i, j = np.nonzero(g.adjacency > 0)
    return _rcm_orders([(g.num_nodes, i, j)])[0]


def _rcm_orders(graphs):
    """rcm_order of each graph (n, i, j) (edges i-j, either direction), the
    graphs walked together: one sort of all their nodes and edges, one
    breadth-first loop."""
    sizes = np.array([n for n, _, _ in graphs], np.int64)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
    total = int(sizes.sum())
    which = np.repeat(np.arange(len(graphs)), [len(i) for _, i, _ in graphs])
    i = np.concatenate([np.asarray(i, np.int64) for _, i, _ in graphs] + [np.zeros(0, np.int64)])
    j = np.concatenate([np.asarray(j, np.int64) for _, _, j in graphs] + [np.zeros(0, np.int64)])
    i, j = i + first[which], j + first[which]
    # Each adjacent pair once (both directions), as the boolean adjacency has it.
    pairs = np.unique(np.r_[i, j] * max(total, 1) + np.r_[j, i])
    src, dst = pairs // max(total, 1), pairs % max(total, 1)
    degree = np.bincount(src, minlength=total)
    graph = np.repeat(np.arange(len(graphs)), sizes)
    # Starts by graph, then increasing degree (ties by index); each node's
    # neighbours by increasing degree, so a visit appends its unseen ones
    # in order.
    rank = np.lexsort((np.arange(total), degree, graph))
    position = np.empty(total, np.int64)
    position[rank] = np.arange(total)
    by = np.lexsort((position[dst], src))
    neighbours = dst[by].tolist()
    start_of = np.searchsorted(src[by], np.arange(total + 1)).tolist()
    seen = [False] * total
    order = []
    for start in rank.tolist():
        if seen[start]:
            continue
        seen[start] = True
        head = len(order)
        order.append(start)
        # Breadth first: `order` is the queue.
        while head < len(order):
            node = order[head]
            head += 1
            for v in neighbours[start_of[node]:start_of[node + 1]]:
                if not seen[v]:
                    seen[v] = True
                    order.append(v)
    # A graph's starts come before the next graph's: its nodes are one
    # segment of `order`, reversed in place.
    order = np.array(order, np.int64)
    return [order[f:f + n][::-1] - f for f, n in zip(first.tolist(), sizes.tolist())]


def _tile_count(n, i, j, part):
    """Non-empty tiles of the graph of edges (i, j) (both directions) when
    node v is in tile row part[v]."""
    if not len(i):
        return 0
    parts = -(-n // OCTILE)
    pi, pj = part[np.concatenate((i, j))], part[np.concatenate((j, i))]
    return len(np.unique(pi * parts + pj))


_PYMETIS = []


def _pymetis():
    """The pymetis module, imported once (a failed import is not cached by
    Python: trying it for every graph cost more than ordering them)."""
    if not _PYMETIS:
        try:
            import pymetis
        except ImportError as error:
            _PYMETIS.append(error)
        else:
            _PYMETIS.append(pymetis)
    if isinstance(_PYMETIS[0], ImportError):
        raise ImportError("the partition-based order (order='pbr') partitions with "
                          "METIS through pymetis (pip install pymetis)") from _PYMETIS[0]
    return _PYMETIS[0]


def has_pymetis():
    """Whether the partition-based order can be made here (pymetis)."""
    try:
        _pymetis()
        return True
    except ImportError:
        return False


def _pbr(n, i, j, seed=0):
    """pbr_order from a graph's node count and undirected edges (i, j)."""
    parts = -(-n // OCTILE)
    if parts <= 1 or not len(i):
        return np.arange(n)
    pymetis = _pymetis()
    # The adjacency (both directions, no self-loops) in CSR form, each
    # node's neighbours in the order of the edges: METIS's input and the
    # balancing's.
    edge = np.arange(len(i))
    src, dst, edge = np.r_[i, j], np.r_[j, i], np.r_[edge, edge]
    keep = src != dst
    src, dst, edge = src[keep], dst[keep], edge[keep]
    order = np.lexsort((edge, src))
    src, dst = src[order], dst[order]
    first = np.searchsorted(src, np.arange(n + 1))
    options = pymetis.Options(seed=seed, ufactor=1, contig=0)
    _, membership = pymetis.part_graph(parts, adjacency=pymetis.CSRAdjacency(first, dst),
                                       recursive=True, options=options)
    part = np.asarray(membership, np.int64)
    # METIS balances the parts only approximately: move nodes from parts
    # over their capacity (8; the smallest part takes the remainder) to
    # parts under it, each time the move out of the first overfull part
    # that leaves the fewest tiles. The tiles are the non-zero entries of
    # the parts' connection counts C (directed edges between parts), which
    # a move changes in two rows and two columns only.
    sizes = np.bincount(part, minlength=parts)
    capacity = np.full(parts, OCTILE)
    capacity[np.argmin(sizes)] = n - OCTILE * (parts - 1)
    c = np.zeros((parts, parts), np.int64)
    np.add.at(c, (part[src], part[dst]), 1)

    def shift(v, target):
        counts = np.bincount(part[dst[first[v]:first[v + 1]]], minlength=parts)
        source = part[v]
        c[source, :] -= counts
        c[:, source] -= counts
        c[target, :] += counts
        c[:, target] += counts
        part[v] = target
        return source

    while (sizes > capacity).any():
        under = np.flatnonzero(sizes < capacity)
        best = None
        # (The first part over capacity gives up one node at a time.)
        for v in np.flatnonzero(part == np.flatnonzero(sizes > capacity)[0]):
            # Parts under capacity that hold a neighbour of v (moving v
            # elsewhere adds tiles without removing any), else all of them.
            near = under[np.isin(under, part[dst[first[v]:first[v + 1]]])]
            for target in near if len(near) else under:
                source = shift(v, target)
                count = np.count_nonzero(c)
                shift(v, source)
                if best is None or count < best[0]:
                    best = (count, v, target)
        _, v, target = best
        sizes[part[v]] -= 1
        sizes[target] += 1
        shift(v, target)
    # Parts in order, the smallest last; nodes by index within a part.
    rank = np.empty(parts, np.int64)
    rank[np.argsort(capacity != OCTILE, kind="stable")] = np.arange(parts)
    return np.lexsort((np.arange(n), rank[part]))


def pbr_order(g, seed=0):
    """The partition-based order (PBR, the solver paper's Section IV):
    the nodes split into ceil(n / 8) parts of 8 (the last holds the rest)
    so that few pairs of parts share an edge — each such pair is a
    non-empty octile — by METIS's recursive bisection (pymetis), made
    exactly balanced by greedy moves (each the move out of the first
    overfull part into an underfull one that leaves the fewest tiles); the
    parts in order, the nodes of a part by index."""
    i, j = np.nonzero(np.triu(g.adjacency > 0, 1))
    return _pbr(g.num_nodes, i, j, seed)


def xmv_octiles(o1, o2, g1, g2, node_kernel, edge_kernel, x, q=0.05, p=None):
    """XMV (as `xmv`) computed octile pair by octile pair from the compact
    octiles of the two graphs: each pair of non-empty tiles (I, J) and
    (I', J') adds the products of their non-zeros' weights and edge kernel
    values, times x's (J, J') block, into y's (I, I') block."""
    s = _system(g1, g2, node_kernel, edge_kernel, q, p)
    y = s.diagonal * x
    lab1 = _labels(o1.labels, edge_kernel, "edge")
    lab2 = _labels(o2.labels, edge_kernel, "edge")
    for t1, (ti, tj) in enumerate(o1.coords):
        r1, c1 = _bits(int(o1.bitmaps[t1]))
        a1 = slice(o1.offsets[t1], o1.offsets[t1 + 1])
        rows1, cols1 = o1.order[ti * OCTILE + r1], o1.order[tj * OCTILE + c1]
        for t2, (ui, uj) in enumerate(o2.coords):
            r2, c2 = _bits(int(o2.bitmaps[t2]))
            a2 = slice(o2.offsets[t2], o2.offsets[t2 + 1])
            rows2, cols2 = o2.order[ui * OCTILE + r2], o2.order[uj * OCTILE + c2]
            if lab1 is None:
                ke = np.full((len(rows1), len(rows2)), edge_kernel.c)
            elif isinstance(lab1, dict):
                ke = edge_kernel({k: v[a1][:, None] for k, v in lab1.items()},
                                 {k: v[a2][None, :] for k, v in lab2.items()})
            else:
                ke = edge_kernel(lab1[a1][:, None], lab2[a2][None, :])
            w = o1.weights[a1][:, None] * o2.weights[a2][None, :] * ke
            np.subtract.at(y, (rows1[:, None], rows2[None, :]),
                           w * x[cols1][:, cols2])
    return y


class Additive:
    """The mean of base kernels over label features: Additive(element=
    KroneckerDelta(0.5), charge=SquareExponential(1.0)) is (kv_element +
    kv_charge) / 2, in (0, 1] like its terms."""

    def __init__(self, **features):
        if not features:
            raise ValueError("Additive takes at least one feature's kernel")
        self.features = features

    def __call__(self, x, y):
        out = 0.0
        for name, kernel in self.features.items():
            out = out + kernel(x[name], y[name])
        return out / len(self.features)


# ---------------------------------------------------------------------------
# Datasets as the dialect's arrays (kron.graphs) and their octiles
# (kron-octile-tiling's derived parameters)
# ---------------------------------------------------------------------------

_ELEMENTARY = (KroneckerDelta, SquareExponential, Constant)


def _real(value):
    """`value` as MLIR writes a float (a digit, a point, an exponent)."""
    return f"{float(value):.17e}"


def kernel_attribute(kernel):
    """The `kron` base-kernel attribute of `kernel` (#kron.delta, ...)."""
    if isinstance(kernel, KroneckerDelta):
        return f"#kron.delta<{_real(kernel.h)}>"
    if isinstance(kernel, SquareExponential):
        return f"#kron.sqexp<{_real(kernel.length_scale)}>"
    if isinstance(kernel, Constant):
        return f"#kron.constant<{_real(kernel.c)}>"
    if isinstance(kernel, (TensorProduct, Additive)):
        for name, k in kernel.features.items():
            if not isinstance(k, _ELEMENTARY):
                raise TypeError(f"feature '{name}' takes a KroneckerDelta, SquareExponential "
                                f"or Constant, got {type(k).__name__}")
        mnemonic = "product" if isinstance(kernel, TensorProduct) else "sum"
        inner = ", ".join(kernel_attribute(k) for k in kernel.features.values())
        return f"#kron.{mnemonic}<[{inner}]>"
    raise TypeError(f"not a base kernel: {kernel!r} (use KroneckerDelta, SquareExponential, "
                    "Constant, TensorProduct or Additive)")


def _feature_names(kernel, graphs, where):
    """The label features `kernel` reads, in the order the packed arrays
    hold them."""
    if isinstance(kernel, (TensorProduct, Additive)):
        return list(kernel.features)
    if isinstance(kernel, Constant):
        return []
    names = {tuple(sorted(getattr(g, f"{where}_labels"))) for g in graphs}
    if len(names) != 1 or len(next(iter(names))) != 1:
        raise ValueError(f"the {where} kernel reads one label feature; the graphs' {where}s "
                         f"have {sorted(names)}: use TensorProduct(feature=kernel, ...)")
    return list(next(iter(names)))


def _label_numbers(values, name, where, index):
    """Labels as float64, refused when they are not numbers."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"graph {index}: {where} label '{name}' holds values that are not "
                        "numbers (map categories to integers first)") from None


def _label_columns(columns, names, where, counts):
    """The labels of every graph as float32 [rows, features], refused (naming
    the first graph) when one is not a finite number; `columns[name]` holds
    each graph's labels, `counts` each graph's rows."""
    if not names:
        return np.zeros((int(np.sum(counts)), 0), np.float32)
    out = []
    for name in names:
        column = np.concatenate(columns[name]) if columns[name] else np.zeros(0)
        bad = np.flatnonzero(~np.isfinite(column))
        if len(bad):
            index = int(np.searchsorted(np.cumsum(counts), bad[0], side="right"))
            raise ValueError(f"graph {index}: {where} label '{name}' holds NaN or infinite "
                             "values")
        out.append(column.astype(np.float32))
    return np.stack(out, 1)


def pack(graphs, node_features=(), edge_features=()):
    """The dataset `graphs` (LabeledGraphs) as `kron.graphs` takes it: a
    dict of `nodes` [G, 2] (first node, count), `node_labels` [V, Fv],
    `edges` [G, 2] (first edge, count), `ends` [E, 2] (each undirected edge
    once, i < j, numbered within its graph), `weights` [E] and
    `edge_labels` [E, Fe], features in the order given. Empty datasets and
    graphs, missing features and labels that are not finite numbers are
    refused."""
    graphs = list(graphs)
    if not graphs:
        raise ValueError("the dataset holds no graph")
    node_counts, edge_counts, ends_i, ends_j, weights = [], [], [], [], []
    node_columns = {f: [] for f in node_features}
    edge_columns = {f: [] for f in edge_features}
    for index, g in enumerate(graphs):
        if not isinstance(g, LabeledGraph):
            raise TypeError(f"graph {index} is a {type(g).__name__}, not a LabeledGraph "
                            "(see from_networkx and from_molecule)")
        n = g.num_nodes
        if n == 0:
            raise ValueError(f"graph {index} has no node; the marginalized kernel needs at "
                             "least one")
        i, j = np.nonzero(np.triu(g.adjacency, 1))
        node_counts.append(n)
        edge_counts.append(len(i))
        ends_i.append(i)
        ends_j.append(j)
        weights.append(g.adjacency[i, j])
        for name in node_features:
            if name not in g.node_labels:
                raise KeyError(f"graph {index} has no node label '{name}'")
            node_columns[name].append(_label_numbers(g.node_labels[name], name, "node", index))
        for name in edge_features:
            if name not in g.edge_labels:
                raise KeyError(f"graph {index} has no edge label '{name}'")
            edge_columns[name].append(_label_numbers(g.edge_labels[name][i, j], name, "edge",
                                                     index))
    node_counts = np.asarray(node_counts, np.int64)
    edge_counts = np.asarray(edge_counts, np.int64)

    def starts_and_counts(counts):
        return np.stack([np.cumsum(counts) - counts, counts], 1).astype(np.int32).reshape(-1, 2)

    return {"nodes": starts_and_counts(node_counts),
            "node_labels": _label_columns(node_columns, node_features, "node", node_counts),
            "edges": starts_and_counts(edge_counts),
            "ends": np.stack([np.concatenate(ends_i), np.concatenate(ends_j)],
                             1).astype(np.int32).reshape(-1, 2),
            "weights": np.concatenate(weights).astype(np.float32),
            "edge_labels": _label_columns(edge_columns, edge_features, "edge", edge_counts)}


def unpack(packed, node_features=(), edge_features=()):
    """The LabeledGraphs of a packed dataset (pack's inverse; labels named
    `node_features`, `edge_features` in the packed order)."""
    graphs = []
    for (first, n), (e0, ne) in zip(packed["nodes"], packed["edges"]):
        ends = packed["ends"][e0:e0 + ne]
        graphs.append(LabeledGraph.from_edges(
            int(n), ends, packed["weights"][e0:e0 + ne].astype(np.float64),
            {f: packed["node_labels"][first:first + n, k].astype(np.float64)
             for k, f in enumerate(node_features)},
            {f: packed["edge_labels"][e0:e0 + ne, k].astype(np.float64)
             for k, f in enumerate(edge_features)}))
    return graphs


#: The node orders kron-octile-tiling cuts the tiles in.
ORDERS = ("natural", "rcm", "pbr", "auto", "refined")


def _check_order(order):
    if order not in ORDERS:
        raise ValueError(f"the node order is 'natural', 'rcm', 'pbr', 'auto' or 'refined', not "
                         f"{order!r}")


def _refine(n, i, j, order, rounds=3):
    """`order` improved by swapping two nodes of different tile rows
    wherever that lowers the tile count — the objective the partition-based
    order approximates, minimized directly (greedy, first improvement, node
    pairs in order, until a round improves nothing or `rounds` are done).
    The counts of edges between tile rows are kept, so a swap is weighed in
    the time of its two nodes' degrees."""
    parts = -(-n // OCTILE)
    order = np.asarray(order, np.int64)
    if parts <= 1 or not len(i):
        return order
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    part = (position // OCTILE).tolist()
    src, dst = np.concatenate((i, j)), np.concatenate((j, i))
    keep = src != dst
    neighbours = [[] for _ in range(n)]
    for u, v in zip(src[keep].tolist(), dst[keep].tolist()):
        neighbours[u].append(v)
    counts = np.zeros((parts, parts), np.int64)
    np.add.at(counts, (np.asarray(part)[src[keep]], np.asarray(part)[dst[keep]]), 1)
    counts = counts.tolist()
    position = position.tolist()

    def change(a, b):
        """The cells (row, column) whose counts a swap of a and b changes."""
        moved = {}
        for node, old, new, other in ((a, part[a], part[b], b), (b, part[b], part[a], a)):
            for v in neighbours[node]:
                if v == other:
                    continue  # the edge a-b stays between the same two rows
                pv = part[v]
                for cell, step in (((old, pv), -1), ((pv, old), -1), ((new, pv), 1),
                                   ((pv, new), 1)):
                    moved[cell] = moved.get(cell, 0) + step
        return moved

    # A swap lowers the count only if it empties a cell: a cell's count at
    # most the edges that a (or b) takes out of it. `rows[x][y]`: x's
    # neighbours in tile row y; `alone[x]`: rows y whose cell (part[x], y)
    # x alone could empty. Pairs that can empty no cell are not weighed
    # (their gain is never negative: the same swaps are made).
    rows = np.zeros((n, parts), np.int64)
    np.add.at(rows, (src[keep], np.asarray(part)[dst[keep]]), 1)
    # (NumPy copies of `part` and `counts`, updated with them: the scans
    # read them whole.)
    part_of = np.asarray(part)
    cell_counts = np.asarray(counts)
    columns = np.arange(parts)

    def emptiable(nodes):
        mine = part_of[nodes]
        taken = rows[nodes] * np.where(columns[None, :] == mine[:, None], 2, 1)
        return (rows[nodes] > 0) & (cell_counts[mine] <= taken)

    alone = emptiable(np.arange(n))
    alone_count = alone.sum(1)
    for _ in range(rounds):
        improved = False
        for a in range(n):
            b = a
            while True:
                pa = part_of[a]
                cells = cell_counts[pa]
                later = np.arange(b + 1, n)
                pb = part_of[later]
                joint = (cells[pb] > 0) & (cells[pb] <= rows[a, pb] + rows[later, pa])
                worth = (pb != pa) & (joint | (alone_count[a] - alone[a, pb] > 0) |
                                      (alone_count[later] - alone[later, pa] > 0))
                found = False
                for b in later[worth].tolist():
                    moved = change(a, b)
                    gain = sum((counts[x][y] + d > 0) - (counts[x][y] > 0)
                               for (x, y), d in moved.items() if d)
                    if gain < 0:
                        for (x, y), d in moved.items():
                            counts[x][y] += d
                            cell_counts[x, y] += d
                        for node, old, new in ((a, part[a], part[b]), (b, part[b], part[a])):
                            for v in neighbours[node]:
                                rows[v, old] -= 1
                                rows[v, new] += 1
                        part[a], part[b] = part[b], part[a]
                        part_of[a], part_of[b] = part[a], part[b]
                        position[a], position[b] = position[b], position[a]
                        improved = found = True
                        # Whose `alone` can change: a, b, their neighbours
                        # (rows) and the nodes of the tile rows whose
                        # counts moved.
                        touched = np.unique([x for x, _ in moved] + [part[a], part[b]])
                        nodes = np.union1d(np.flatnonzero(np.isin(part_of, touched)),
                                           [a, b, *neighbours[a], *neighbours[b]])
                        alone[nodes] = emptiable(nodes)
                        alone_count[nodes] = alone[nodes].sum(1)
                        break
                if not found:
                    break
        if not improved:
            break
    return np.argsort(np.asarray(position), kind="stable")


def _graph_order(n, i, j, order):
    """The node order of one graph (its nodes in their new order) for
    `order`; `auto`: of natural, RCM and PBR, the one with the fewest
    tiles (the first of them on a tie); `refined`: auto's, with node swaps
    that lower the tile count (_refine)."""
    return _orders([(n, i, j)], order)[0]


def _orders(graphs, order):
    """_graph_order of each graph (n, i, j): a graph of one tile row keeps
    its order; the others' orders are made together (RCM walked for all,
    auto's candidates counted for all at once)."""
    _check_order(order)
    out = [np.arange(n) for n, _, _ in graphs]
    big = [g for g, (n, _, _) in enumerate(graphs) if n > OCTILE]
    if order == "natural" or not big:
        return out
    if order == "rcm":
        made = _rcm_orders([graphs[g] for g in big])
    elif order == "pbr":
        made = [_pbr(*graphs[g]) for g in big]
    else:
        made = _best_orders([graphs[g] for g in big], order)
    for g, o in zip(big, made):
        out[g] = o
    return out


def _best_orders(graphs, order):
    """The `auto` (or `refined`) orders of graphs (n, i, j) of more than one
    tile row, the candidates' tile counts of all graphs computed at once."""
    candidates = [[np.arange(n) for n, _, _ in graphs], _rcm_orders(graphs)]
    if has_pymetis():
        candidates.append([_pbr(*g) for g in graphs])
    else:
        # (auto weighs the orders it can make: the partition-based one
        # needs pymetis; the order changes the speed, not the values.)
        _warn_once("kge.kron: pymetis is not installed; order='auto' weighs the natural "
                   "and RCM orders only")
    sizes = np.array([n for n, _, _ in graphs], np.int64)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    which = np.repeat(np.arange(len(graphs)), [len(i) for _, i, _ in graphs])
    src = np.concatenate([i for _, i, _ in graphs]).astype(np.int64) + first[which]
    dst = np.concatenate([j for _, _, j in graphs]).astype(np.int64) + first[which]
    local = np.arange(sizes.sum()) - np.repeat(first, sizes)
    rows = int(-(-sizes.max() // OCTILE))
    tiles = []
    for orders in candidates:
        # Tile row of each node, then the distinct (graph, row, column)
        # keys of both directions of every edge, counted per graph.
        position = np.empty(sizes.sum(), np.int64)
        position[np.concatenate(orders) + np.repeat(first, sizes)] = local
        part = position // OCTILE
        keys = np.unique(np.concatenate((which, which)) * rows * rows +
                         part[np.r_[src, dst]] * rows + part[np.r_[dst, src]])
        tiles.append(np.bincount(keys // (rows * rows), minlength=len(graphs)))
    best = np.argmin(np.stack(tiles), 0)
    out = [candidates[c][k] for k, c in enumerate(best.tolist())]
    if order == "refined":
        out = [_refine(*g, o) for g, o in zip(graphs, out)]
    return out


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        import warnings
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def graph_orders(nodes, edges, ends, order="auto"):
    """The node order (_graph_order) of each graph of a packed dataset: the
    per-graph work of octile_parts."""
    nodes, edges = np.asarray(nodes, np.int64), np.asarray(edges, np.int64)
    ends = np.asarray(ends, np.int64)
    return _orders([(int(nodes[g, 1]), ends[edges[g, 0]:edges[g, 0] + edges[g, 1], 0],
                     ends[edges[g, 0]:edges[g, 0] + edges[g, 1], 1]) for g in range(len(nodes))],
                   order)


# Sharing the per-graph preparation out (kge.distributed.gram): a `share`
# callable takes compute(start, stop), the work of graphs [start, stop), and
# the number of graphs, and returns the results of contiguous blocks that
# cover them, in order (None: the whole dataset at once, here). Packed
# datasets and octiles of consecutive blocks concatenate into those of the
# whole dataset, equal to computing them at once.

def packed_slice(packed, start, stop):
    """Graphs [start, stop) of a packed dataset (start < stop), as pack()
    gives them on their own."""
    nodes = np.asarray(packed["nodes"], np.int64)
    edges = np.asarray(packed["edges"], np.int64)
    if not 0 <= start < stop <= len(nodes):
        raise ValueError(f"graphs [{start}, {stop}) are not a block of the dataset's "
                         f"{len(nodes)} graphs")
    n0, n1 = nodes[start, 0], nodes[stop - 1].sum()
    e0, e1 = edges[start, 0], edges[stop - 1].sum()
    return {"nodes": (nodes[start:stop] - [n0, 0]).astype(np.int32),
            "node_labels": np.asarray(packed["node_labels"])[n0:n1],
            "edges": (edges[start:stop] - [e0, 0]).astype(np.int32),
            "ends": np.asarray(packed["ends"])[e0:e1],
            "weights": np.asarray(packed["weights"])[e0:e1],
            "edge_labels": np.asarray(packed["edge_labels"])[e0:e1]}


def _offsets(parts, key):
    if not parts:
        raise ValueError("no blocks to concatenate")
    return np.cumsum([0] + [len(p[key]) for p in parts[:-1]])


def concat_packed(parts):
    """The packed dataset of consecutive blocks of graphs, each packed."""
    nodes, edges = _offsets(parts, "node_labels"), _offsets(parts, "weights")
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    out["nodes"] = np.concatenate([p["nodes"] + [n, 0] for p, n in zip(parts, nodes)]
                                  ).astype(np.int32)
    out["edges"] = np.concatenate([p["edges"] + [e, 0] for p, e in zip(parts, edges)]
                                  ).astype(np.int32)
    return out


def concat_octiles(parts):
    """octile_parts of consecutive blocks of graphs, each tiled on its own,
    as one dataset's."""
    nodes, tiles = _offsets(parts, "node_labels"), _offsets(parts, "coords")
    nonzeros = _offsets(parts, "weights")
    out = {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
    out["rows"] = np.concatenate([p["rows"] + n for p, n in zip(parts, nodes)]).astype(np.int32)
    out["tiles"] = np.concatenate([p["tiles"] + [t, 0] for p, t in zip(parts, tiles)]
                                  ).astype(np.int32)
    out["offsets"] = np.concatenate([p["offsets"] + z for p, z in zip(parts, nonzeros)]
                                    ).astype(np.int32)
    return out


def pack_shared(graphs, node_features=(), edge_features=(), share=None):
    """pack(), its blocks of graphs computed by `share` (see above)."""
    graphs = list(graphs)
    if share is None or len(graphs) < 2:
        return pack(graphs, node_features, edge_features)
    return concat_packed(share(lambda a, b: pack(graphs[a:b], node_features, edge_features),
                               len(graphs)))


def octiles_shared(nodes, node_labels, edges, ends, weights, edge_labels, order="auto",
                   share=None):
    """octile_parts(), its blocks of graphs computed by `share`."""
    packed = {"nodes": nodes, "node_labels": node_labels, "edges": edges, "ends": ends,
              "weights": weights, "edge_labels": edge_labels}
    if share is None or len(nodes) < 2:
        return octile_parts(**packed, order=order)
    return concat_octiles(share(lambda a, b: octile_parts(**packed_slice(packed, a, b),
                                                          order=order), len(nodes)))


def octile_parts(nodes, node_labels, edges, ends, weights, edge_labels, order="auto"):
    """kron-octile-tiling's derived parameters of a packed dataset: each
    graph's nodes in `order` (natural, rcm, pbr, auto: per graph the
    one with the fewest tiles, or refined: auto's with node swaps that
    lower the tile count), its adjacency as non-empty 8 x 8 tiles (both directions
    of each edge), each a 64-bit bitmap (bit r * 8 + c) and its non-zeros
    in bit order. A dict of `node_labels`, `degrees` and `rows` (the
    node's row in the packed order) per node (tiled order), `tiles` [G, 2] (first tile, count), `coords` (row << 16 |
    column), `bitmaps` (int64), `offsets` (first non-zero) per tile, and
    `weights`, `edge_labels` per non-zero."""
    _check_order(order)
    nodes = np.asarray(nodes, np.int64)
    ends = np.asarray(ends, np.int64)
    weights = np.asarray(weights, np.float32)
    edge_labels = np.asarray(edge_labels, np.float32)
    node_labels = np.asarray(node_labels, np.float32)
    position = np.empty(len(node_labels), np.int64)
    graph_of_edge = np.repeat(np.arange(len(edges)), np.asarray(edges)[:, 1])
    for (first, n), o in zip(nodes, graph_orders(nodes, edges, ends, order)):
        position[first + np.asarray(o, np.int64)] = np.arange(n)
    base = nodes[graph_of_edge, 0]
    # Both directions of every edge, as (graph, tile row, tile column, bit).
    src = np.r_[ends[:, 0], ends[:, 1]]
    dst = np.r_[ends[:, 1], ends[:, 0]]
    graph = np.r_[graph_of_edge, graph_of_edge]
    pi = position[np.r_[base, base] + src]
    pj = position[np.r_[base, base] + dst]
    w = np.r_[weights, weights]
    labels = np.concatenate([edge_labels, edge_labels])
    row, col, bit = pi // OCTILE, pj // OCTILE, (pi % OCTILE) * OCTILE + pj % OCTILE
    key = np.lexsort((bit, col, row, graph))
    graph, row, col, bit, w, labels = graph[key], row[key], col[key], bit[key], w[key], labels[key]
    tile_key = (graph << 40) | (row << 20) | col
    starts = np.flatnonzero(np.r_[True, tile_key[1:] != tile_key[:-1]]) if len(key) else \
        np.zeros(0, np.int64)
    bitmaps = (np.bitwise_or.reduceat(np.left_shift(np.uint64(1), bit.astype(np.uint64)), starts)
               if len(key) else np.zeros(0, np.uint64))
    tile_graph = graph[starts]
    counts = np.bincount(tile_graph, minlength=len(nodes))
    first_tile = np.r_[0, np.cumsum(counts)[:-1]]
    degrees = np.zeros(len(node_labels), np.float64)
    np.add.at(degrees, np.r_[base, base] + src, np.r_[weights, weights])
    # Node v of graph g moves to row first(g) + position[v].
    target = np.repeat(nodes[:, 0], nodes[:, 1]) + position
    tiled_labels = np.empty_like(node_labels)
    tiled_labels[target] = node_labels
    tiled_degrees = np.empty(len(node_labels), np.float32)
    tiled_degrees[target] = degrees
    rows = np.empty(len(node_labels), np.int32)
    rows[target] = np.arange(len(node_labels))
    return {"node_labels": tiled_labels, "degrees": tiled_degrees, "rows": rows,
            "tiles": np.stack([first_tile, counts], 1).astype(np.int32),
            "coords": ((row[starts] << 16) | col[starts]).astype(np.int32),
            "bitmaps": bitmaps.view(np.int64),
            "offsets": starts.astype(np.int32),
            "weights": w.astype(np.float32), "edge_labels": labels.reshape(len(labels), edge_labels.shape[1])}


def pair_schedule(x_nodes, x_tiles, y_nodes=None, y_tiles=None, normalize=False):
    """convert-kron-to-gpu's pair schedule: rows (kind, a, b) — kind 0 the
    Gram entry (X[a], Y[b]), 1 and 2 the self-kernels of X[a] and Y[b]
    that normalization divides by — most expensive first (_costs).
    Without Y the dataset is compared with itself and each unordered pair
    is listed once (the diagonal holds the self-kernels)."""
    x_nodes = np.asarray(x_nodes, np.int64)
    symmetric = y_nodes is None
    y_nodes = x_nodes if symmetric else np.asarray(y_nodes, np.int64)
    if symmetric:
        a, b = np.triu_indices(len(x_nodes))
    else:
        a, b = np.divmod(np.arange(len(x_nodes) * len(y_nodes)), len(y_nodes))
    kind = np.zeros(len(a), np.int32)
    if normalize and not symmetric:
        sx, sy = np.arange(len(x_nodes)), np.arange(len(y_nodes))
        kind = np.r_[kind, np.ones(len(sx), np.int32), np.full(len(sy), 2, np.int32)]
        a, b = np.r_[a, sx, np.zeros(len(sy), np.int64)], np.r_[b, np.zeros(len(sx), np.int64), sy]
    cost = _costs(kind, a, b, x_nodes, x_tiles, None if symmetric else y_nodes,
                  None if symmetric else y_tiles)
    order = descending(cost)
    return np.stack([kind[order], a.astype(np.int32)[order], b.astype(np.int32)[order]], 1)


def _costs(kind, a, b, x_nodes, x_sizes, y_nodes=None, y_sizes=None):
    """The cost of each schedule row (kind, a, b): product nodes plus 16
    per pair of octiles (`x_sizes`/`y_sizes` the datasets' octile [first,
    count] rows; any other per-graph size, e.g. edges, does for a schedule
    without octiles)."""
    xn, xt = np.asarray(x_nodes, np.int64)[:, 1], np.asarray(x_sizes, np.int64)[:, 1]
    yn = xn if y_nodes is None else np.asarray(y_nodes, np.int64)[:, 1]
    yt = xt if y_sizes is None else np.asarray(y_sizes, np.int64)[:, 1]
    entry = kind == 0
    if entry.all():
        return xn[a] * yn[b] + 16 * xt[a] * yt[b]
    cost = np.zeros(len(kind), np.int64)
    cost[entry] = xn[a[entry]] * yn[b[entry]] + 16 * xt[a[entry]] * yt[b[entry]]
    for which, n, t, index in ((1, xn, xt, a), (2, yn, yt, b)):
        rows = kind == which
        cost[rows] = n[index[rows]] ** 2 + 16 * t[index[rows]] ** 2
    return cost


def pair_schedule_tensor(x_nodes, x_tiles, y_nodes=None, y_tiles=None, normalize=False,
                         device="cuda"):
    """pair_schedule made on a PyTorch device: the same rows in the same
    order, an int32 [P, 3] tensor (millions of pairs in milliseconds on a
    GPU, where the host takes seconds)."""
    import torch

    def column(sizes):
        return torch.as_tensor(np.asarray(sizes, np.int64)[:, 1], device=device)

    xn, xt = column(x_nodes), column(x_tiles)
    symmetric = y_nodes is None
    yn, yt = (xn, xt) if symmetric else (column(y_nodes), column(y_tiles))
    if symmetric:
        a, b = torch.triu_indices(len(xn), len(xn), device=device)
    else:
        index = torch.arange(len(xn) * len(yn), device=device)
        a, b = index // len(yn), index % len(yn)
    kind = torch.zeros(len(a), dtype=torch.int64, device=device)
    if normalize and not symmetric:
        sx = torch.arange(len(xn), device=device)
        sy = torch.arange(len(yn), device=device)
        kind = torch.cat([kind, torch.ones_like(sx), torch.full_like(sy, 2)])
        a = torch.cat([a, sx, torch.zeros_like(sy)])
        b = torch.cat([b, torch.zeros_like(sx), sy])
    left_n = torch.where(kind == 2, yn[b], xn[a])
    right_n = torch.where(kind == 1, xn[a], yn[b])
    left_t = torch.where(kind == 2, yt[b], xt[a])
    right_t = torch.where(kind == 1, xt[a], yt[b])
    cost = left_n * right_n + 16 * left_t * right_t
    order = torch.sort(-cost, stable=True).indices
    return torch.stack([kind[order], a[order], b[order]], 1).to(torch.int32)


#: Floats after each of a block's solver vectors: the dense octile product
#: reads up to 7 elements past p (zeros the solver writes), and takes
#: sparse octile pairs only where a pair's share of the workspace lacks them.
SOLVER_VECTOR_PAD = 8


def workspace_size_tensor(pairs, x_nodes, y_nodes=None, blocks=1024, vectors=4):
    """workspace_size of a schedule held as a PyTorch tensor."""
    import torch
    if not len(pairs):
        return 0
    device = pairs.device
    xn = torch.as_tensor(np.asarray(x_nodes, np.int64)[:, 1], device=device)
    yn = xn if y_nodes is None else torch.as_tensor(np.asarray(y_nodes, np.int64)[:, 1],
                                                    device=device)
    kind, a, b = pairs[:, 0], pairs[:, 1].long(), pairs[:, 2].long()
    left = torch.where(kind == 2, yn[b], xn[a])
    right = torch.where(kind == 1, xn[a], yn[b])
    return int(min(len(pairs), blocks) * vectors
               * (int((left * right).max()) + SOLVER_VECTOR_PAD))


def descending(cost):
    """The stable order of `cost` (integers), dearest first: a radix sort
    when the costs span fewer than 2^16 values (millions of pairs in a
    fraction of a second), else a merge sort."""
    cost = np.asarray(cost, np.int64)
    if not len(cost):
        return np.zeros(0, np.int64)
    key = cost.max() - cost
    if key.max() < 1 << 16:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable")


def workspace_size(pairs, x_nodes, y_nodes=None, blocks=1024, vectors=4):
    """The solver workspace's length (floats): `vectors` of the largest
    product n n' of the schedule, each padded by SOLVER_VECTOR_PAD, for each
    of the min(P, blocks) blocks."""
    x_nodes = np.asarray(x_nodes, np.int64)
    y_nodes = x_nodes if y_nodes is None else np.asarray(y_nodes, np.int64)
    pairs = np.asarray(pairs, np.int64)
    if not len(pairs):
        return 0
    kind, a, b = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    left = np.where(kind == 2, y_nodes[b, 1], x_nodes[a, 1])
    right = np.where(kind == 1, x_nodes[a, 1], y_nodes[b, 1])
    return int(min(len(pairs), blocks) * vectors
               * (int((left * right).max()) + SOLVER_VECTOR_PAD))


def _tile_dense(parts, tile, features):
    """Tile `tile` of `parts` expanded: weights [8, 8] and labels {feature:
    [8, 8]} (zero where the bitmap is clear)."""
    bitmap = int(np.uint64(parts["bitmaps"][tile].astype(np.int64).view(np.uint64)))
    bits = [b for b in range(OCTILE * OCTILE) if (bitmap >> b) & 1]
    first = int(parts["offsets"][tile])
    w = np.zeros(OCTILE * OCTILE)
    w[bits] = parts["weights"][first:first + len(bits)]
    labels = {}
    for f, name in enumerate(features):
        column = np.zeros(OCTILE * OCTILE)
        column[bits] = parts["edge_labels"][first:first + len(bits), f]
        labels[name] = column.reshape(OCTILE, OCTILE)
    return w.reshape(OCTILE, OCTILE), labels


def _evaluate(kernel, x, y):
    """A base kernel of labels {feature: array} (broadcast)."""
    if isinstance(kernel, Constant):
        return np.full(np.broadcast(*(list(x.values()) + list(y.values()) or [0])).shape,
                       kernel.c)
    if isinstance(kernel, (TensorProduct, Additive)):
        return kernel(x, y)
    (name,) = x
    return kernel(x[name], y[name])


def solve_octiles(parts1, g1, parts2, g2, node_kernel, edge_kernel, node_features,
                  edge_features, q=0.05, tol=1e-6, maxiter=1000, degrees="additive",
                  nodal=False):
    """The GPU solver's algorithm on the CPU (float64), on the arrays the
    kernel reads: graph `g1` of octile parts `parts1` against graph `g2` of
    `parts2`: conjugate gradient with the diagonal preconditioner, XMV's
    off-diagonal part accumulated octile pair by octile pair. Returns
    (K, iterations), iterations negated when it did not converge; `nodal`:
    (the solution [n1, n2] in the tiled order, iterations)."""
    (t1, nt1), (t2, nt2) = parts1["tiles"][g1], parts2["tiles"][g2]
    first1, n1 = parts1["nodes"][g1]
    first2, n2 = parts2["nodes"][g2]
    def labels(parts, first, n):
        return {name: parts["node_labels"][first:first + n, f].astype(np.float64)
                for f, name in enumerate(node_features)}
    l1, l2 = labels(parts1, first1, n1), labels(parts2, first2, n2)
    kv = _evaluate(node_kernel, {k: v[:, None] for k, v in l1.items()},
                   {k: v[None, :] for k, v in l2.items()})
    kv = np.broadcast_to(kv, (n1, n2))
    d = np.outer(degree(parts1["degrees"][first1:first1 + n1], q, degrees),
                 degree(parts2["degrees"][first2:first2 + n2], q, degrees))
    dv = d / kv
    pad1, pad2 = -(-n1 // OCTILE) * OCTILE, -(-n2 // OCTILE) * OCTILE
    blocks = []
    for u in range(t1, t1 + nt1):
        w1, e1 = _tile_dense(parts1, u, edge_features)
        r1, c1 = divmod(int(parts1["coords"][u]), 1 << 16)
        for v in range(t2, t2 + nt2):
            w2, e2 = _tile_dense(parts2, v, edge_features)
            r2, c2 = divmod(int(parts2["coords"][v]), 1 << 16)
            ke = _evaluate(edge_kernel, {k: a[:, None, :, None] for k, a in e1.items()},
                           {k: a[None, :, None, :] for k, a in e2.items()})
            blocks.append((r1, c1, r2, c2, w1[:, None, :, None] * w2[None, :, None, :] * ke))

    def xmv(p):
        y = np.zeros((pad1, pad2))
        y[:n1, :n2] = dv * p[:n1, :n2]
        for r1, c1, r2, c2, m in blocks:
            y[r1 * 8:r1 * 8 + 8, r2 * 8:r2 * 8 + 8] -= np.einsum(
                "iajb,jb->ia", m, p[c1 * 8:c1 * 8 + 8, c2 * 8:c2 * 8 + 8])
        return y

    def padded(a):
        out = np.zeros((pad1, pad2))
        out[:n1, :n2] = a
        return out
    dvp = padded(dv)
    dvp[dvp == 0] = 1
    r = padded(d * q * q)
    x = np.zeros_like(r)
    z = r / dvp
    p = z.copy()
    rz, bound = float((r * z).sum()), tol * tol * float((r * r).sum())
    for iteration in range(1, maxiter + 1):
        ap = xmv(p)
        alpha = rz / float((p * ap).sum())
        x += alpha * p
        r -= alpha * ap
        z = r / dvp
        rz_next = float((r * z).sum())
        if float((r * r).sum()) <= bound:
            return (x[:n1, :n2] if nodal else float(x.sum()) / (n1 * n2)), iteration
        p = z + (rz_next / rz) * p
        rz = rz_next
    return (x[:n1, :n2] if nodal else float(x.sum()) / (n1 * n2)), -maxiter


def gram_octiles(parts_x, pairs, node_kernel, edge_kernel, node_features, edge_features,
                 parts_y=None, q=0.05, tol=1e-6, maxiter=1000, normalize=False,
                 degrees="additive", nodal=False):
    """The Gram matrix and iteration counts as the GPU kernel computes
    them from the octile parts and the pair schedule (solve_octiles per
    pair, results scattered by kind, then normalized); `nodal`: the
    node-wise similarities [V, V_y] instead, each pair's solution
    scattered through the parts' `rows` (kron.nodewise)."""
    symmetric = parts_y is None
    parts_y = parts_x if symmetric else parts_y
    gx, gy = len(parts_x["nodes"]), len(parts_y["nodes"])
    if nodal:
        if normalize:
            raise ValueError("node-wise similarities are not normalized")
        s = np.full((len(parts_x["rows"]), len(parts_y["rows"])), np.nan)
        iterations = np.zeros((gx, gy), np.int64)
        for _, a, b in np.asarray(pairs):
            x, its = solve_octiles(parts_x, a, parts_y, b, node_kernel, edge_kernel,
                                   node_features, edge_features, q, tol, maxiter, degrees,
                                   nodal=True)
            (f1, n1), (f2, n2) = parts_x["nodes"][a], parts_y["nodes"][b]
            rows = parts_x["rows"][f1:f1 + n1]
            columns = parts_y["rows"][f2:f2 + n2]
            s[np.ix_(rows, columns)] = x
            iterations[a, b] = its
            if symmetric:
                s[np.ix_(columns, rows)] = x.T
                iterations[b, a] = its
        return s, iterations
    k = np.full((gx, gy), np.nan)
    iterations = np.zeros((gx, gy), np.int64)
    self_x, self_y = np.zeros(gx), np.zeros(gy)
    for kind, a, b in np.asarray(pairs):
        left, li = (parts_y, b) if kind == 2 else (parts_x, a)
        right, ri = (parts_x, a) if kind == 1 else (parts_y, b)
        value, its = solve_octiles(left, li, right, ri, node_kernel, edge_kernel,
                                   node_features, edge_features, q, tol, maxiter, degrees)
        if kind == 0:
            k[a, b], iterations[a, b] = value, its
            if symmetric:
                k[b, a], iterations[b, a] = value, its
                if a == b:
                    self_x[a] = value
        elif kind == 1:
            self_x[a] = value
        else:
            self_y[b] = value
    if normalize:
        k = k / np.sqrt(np.outer(self_x, self_x if symmetric else self_y))
    return k, iterations


# ---------------------------------------------------------------------------
# The compiled solver
# ---------------------------------------------------------------------------

def gram_module(node_kernel, edge_kernel, node_features, edge_features, q=0.05, tol=1e-6,
                maxiter=1000, normalize=False, symmetric=True, name="gram",
                degrees="additive", nodal=False):
    """The `kron` function computing the Gram matrix of one dataset with
    itself (`symmetric`) or of X against Y, as MLIR text; `nodal`: the
    node-wise similarities (kron.nodewise) instead."""
    if not 0 < q < 1:
        raise ValueError(f"the stopping probability must be in (0, 1), got {q}")
    if not tol > 0:
        raise ValueError(f"the tolerance must be positive, got {tol}")
    if not (isinstance(maxiter, int) and maxiter >= 1):
        raise ValueError(f"the iteration cap must be a positive integer, got {maxiter!r}")
    _check_degrees(degrees)
    if nodal and normalize:
        raise ValueError("node-wise similarities are not normalized")
    fv, fe = len(node_features), len(edge_features)
    graphs_type = f"!kron.graphs<node_labels = {fv}, edge_labels = {fe}>"
    tensors = (f"tensor<?x2xi32>, tensor<?x{fv}xf32>, tensor<?x2xi32>, tensor<?x2xi32>, "
               f"tensor<?xf32>, tensor<?x{fe}xf32>")
    args, datasets = [], []
    for suffix in ([""] if symmetric else ["", "_y"]):
        names = ["nodes", "node_labels", "edges", "ends", "weights", "edge_labels"]
        types = tensors.split(", ")
        args += [f'%{n}{suffix}: {t} {{kge.param = "{n}{suffix}"}}' for n, t in zip(names, types)]
        datasets.append(
            f"  %X{suffix} = kron.graphs nodes(%nodes{suffix}, %node_labels{suffix}) "
            f"edges(%edges{suffix}, %ends{suffix}, %weights{suffix}, %edge_labels{suffix}) "
            f": {tensors} -> {graphs_type}")
    operands = "%X" if symmetric else "%X, %X_y"
    types = graphs_type if symmetric else f"{graphs_type}, {graphs_type}"
    result, op = ("similarity", "kron.nodewise") if nodal else ("gram", "kron.gram")
    return (f"func.func @{name}({', '.join(args)})\n"
            f"    -> (tensor<?x?xf32> {{kge.param = \"{result}\"}}, "
            f"tensor<?x?xi32> {{kge.param = \"iterations\"}}) {{\n"
            + "\n".join(datasets) + "\n"
            f"  %K, %it = {op} {operands} node({kernel_attribute(node_kernel)}) "
            f"edge({kernel_attribute(edge_kernel)}) stop({_real(q)}) degrees(\"{degrees}\") "
            f"tol({_real(tol)}) "
            f"max_iter({maxiter}){' normalize' if normalize else ''} "
            f": {types} -> tensor<?x?xf32>, tensor<?x?xi32>\n"
            f"  return %K, %it : tensor<?x?xf32>, tensor<?x?xi32>\n}}\n")


#: Blocks the solver keeps resident (convert-kron-to-gpu's `blocks`).
RESIDENT_BLOCKS = 1024


def compile_gram(node_kernel, edge_kernel, node_features, edge_features, q=0.05, tol=1e-6,
                 maxiter=1000, normalize=False, symmetric=True, order="auto", cubin=True,
                 cache=True, degrees="additive", nodal=False, **solver):
    """The GPU bundle (kge.compiler.Bundle) of gram_module's function,
    lowered through kron-octile-tiling{order}, convert-kron-to-gpu and
    kge-lower-to-gpu; compiled once, then read from the bundle cache.
    `solver` takes convert-kron-to-gpu's options by their Python names
    (blocks, cached_tiles, dense_threshold, blocks_per_sm, product_rows,
    rows_density)."""
    allowed = {"blocks", "cached_tiles", "dense_threshold", "blocks_per_sm", "product_rows",
               "rows_density"}
    unknown = set(solver) - allowed
    if unknown:
        raise TypeError(f"unknown solver option(s) {', '.join(sorted(unknown))} (expected "
                        f"{', '.join(sorted(allowed))})")
    solver.setdefault("blocks", RESIDENT_BLOCKS)
    options = "".join(f" {k.replace('_', '-')}="
                      f"{str(v).lower() if isinstance(v, bool) else int(v)}"
                      for k, v in sorted(solver.items()))
    text = gram_module(node_kernel, edge_kernel, node_features, edge_features, q, tol,
                       maxiter, normalize, symmetric, degrees=degrees, nodal=nodal)

    def build():
        # (The compiler only on a cache miss: a cached bundle runs where
        # only the runtime is.)
        from . import compiler, ir
        module = compiler.lower_text(
            text, f"kron-octile-tiling{{order={order}}},"
                  f"convert-kron-to-gpu{{{options.strip()}}},kge-lower-to-gpu")
        return compiler.Bundle(ir.to_bundle(module, cubin))

    return _cache.cached({"kron": text, "order": order, "cubin": cubin,
                          "solver": options}, build, cache, cubin=cubin)


def derived_arrays(bundle, arrays, share=None, functions=None):
    """The parameters of `bundle` that the caller derives (the manifest's
    `derived`: kron-octile-tiling's octiles, convert-kron-to-gpu's pair
    schedule), computed from `arrays` (the packed datasets by parameter
    name), and the workspace's length under "workspace" (allocated on the
    device by the caller). `share`: how the octiles' per-graph work is
    shared out (octiles_shared). `functions`: only the parameters derived by
    these (e.g. {"octiles"})."""
    derived = bundle.manifest.get("derived", {})
    out, computed = {}, {}
    for param in bundle.params:
        name = param["name"]
        fields = derived.get(name)
        if fields is None or name in arrays or (functions is not None and
                                                fields["function"] not in functions):
            continue
        given = {**arrays, **out}
        function = fields["function"]
        if function == "octiles":
            sources = tuple(fields[k] for k in ("nodes", "node_labels", "edges", "ends",
                                                "weights", "edge_labels"))
            missing = [s for s in sources if s not in given]
            if missing:
                raise KeyError(f"parameter '{name}' is derived from {', '.join(sources)}; "
                               f"missing {', '.join(missing)}")
            key = (sources, fields["order"])
            if key not in computed:
                computed[key] = octiles_shared(*(given[s] for s in sources),
                                               order=fields["order"], share=share)
            out[name] = computed[key][fields["part"]]
        elif function == "pair_schedule":
            symmetric = fields["symmetric"] == "true"
            out[name] = pair_schedule(
                given[fields["x_nodes"]], given[fields["x_tiles"]],
                None if symmetric else given[fields["y_nodes"]],
                None if symmetric else given[fields["y_tiles"]],
                normalize=fields["normalize"] == "true")
        elif function == "solver_workspace":
            symmetric = fields["x_nodes"] == fields["y_nodes"]
            out[name] = workspace_size(given[fields["pairs"]], given[fields["x_nodes"]],
                                       None if symmetric else given[fields["y_nodes"]],
                                       int(fields["blocks"]), int(fields["vectors"]))
        else:
            raise ValueError(f"parameter '{name}' is derived by '{function}', which kge.kron "
                             "does not know")
    return out


def gram_inputs(packed_x, packed_y=None):
    """The packed datasets as a compile_gram bundle's parameters by name
    (Y's suffixed `_y`)."""
    arrays = dict(packed_x)
    if packed_y is not None:
        arrays.update({f"{k}_y": v for k, v in packed_y.items()})
    return arrays


def schedule_parameter(bundle, function="pair_schedule"):
    """The name of a compile_gram bundle's pair-schedule parameter (or of
    another derived one: `function` "solver_workspace") and its
    derivation's fields."""
    for name, fields in bundle.manifest.get("derived", {}).items():
        if fields.get("function") == function:
            return name, fields
    raise ValueError(f"the bundle has no derived {function}: not a compile_gram bundle")


def gram_arguments(bundle, packed_x, packed_y=None, device="cuda", given=None):
    """The arguments of a compile_gram bundle as PyTorch tensors on
    `device`: the packed datasets (Y's parameters suffixed `_y`), their
    derived parameters (derived_arrays; those in `given` taken from it, e.g.
    a part of the pair schedule) and the workspace, allocated."""
    import torch
    arrays = gram_inputs(packed_x, packed_y)
    arrays.update(given or {})
    arrays.update(derived_arrays(bundle, arrays))
    tensors = {}
    for param in bundle.params:
        name = param["name"]
        if param["role"] == "result":
            continue
        if name == "workspace":
            tensors[name] = torch.empty(max(arrays[name], 1), dtype=torch.float32,
                                        device=device)
        elif isinstance(arrays[name], torch.Tensor):
            tensors[name] = arrays[name].to(device)
        else:
            tensors[name] = torch.from_numpy(np.ascontiguousarray(arrays[name])).to(device)
    return tensors


def run_gram(bundle, packed_x, packed_y=None, device="cuda", program=None, given=None):
    """Runs a compile_gram bundle on the GPU (PyTorch tensors): derives
    the octiles, the pair schedule and the workspace (those not `given`),
    launches, and returns (gram, iterations) as NumPy arrays (a nodal
    bundle: the similarities [V, V_y] first)."""
    program = program or bundle.load()
    results = program(**gram_arguments(bundle, packed_x, packed_y, device, given))
    first = "similarity" if "similarity" in results else "gram"
    return results[first].cpu().numpy(), results["iterations"].cpu().numpy()


# ---------------------------------------------------------------------------
# Graphs from networkx and RDKit
# ---------------------------------------------------------------------------

def from_networkx(graph, node_labels=None, edge_labels=None, weight=None):
    """A LabeledGraph of an undirected networkx graph: `node_labels` and
    `edge_labels` name the numeric node and edge attributes to keep (all
    that every node / edge has, by default); `weight` the edge attribute
    holding the weight (1 by default). Nodes are numbered in the graph's
    order."""
    nodes = list(graph.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    edges = [(index[u], index[v]) for u, v in graph.edges if u != v]
    data = [d for u, v, d in graph.edges(data=True) if u != v]

    def common(items):
        keys = None
        for d in items:
            keys = set(d) if keys is None else keys & set(d)
        return sorted(keys or [])
    if node_labels is None:
        node_labels = common(graph.nodes[v] for v in nodes)
    if edge_labels is None:
        edge_labels = [k for k in common(data) if k != weight]
    try:
        node_values = {k: np.array([graph.nodes[v][k] for v in nodes]) for k in node_labels}
        edge_values = {k: np.array([d[k] for d in data]) for k in edge_labels}
    except KeyError as missing:
        raise KeyError(f"a node or edge lacks the label {missing}") from None
    weights = np.array([d[weight] for d in data], float) if weight else None
    return LabeledGraph.from_edges(len(nodes), edges, weights, node_values, edge_values)


#: RDKit's bond types as bond orders (aromatic: 1.5).
_BOND_ORDERS = {"SINGLE": 1.0, "DOUBLE": 2.0, "TRIPLE": 3.0, "AROMATIC": 1.5}


def from_molecule(molecule):
    """A LabeledGraph of an RDKit molecule: atoms are nodes labeled
    `element` (atomic number), `charge` (formal charge), `aromatic` (0/1)
    and `hydrogens` (attached H count); bonds are edges of weight 1
    labeled `order` (1, 1.5, 2, 3) and `ring` (0/1)."""
    atoms = list(molecule.GetAtoms())
    bonds = list(molecule.GetBonds())
    node_labels = {
        "element": np.array([a.GetAtomicNum() for a in atoms], float),
        "charge": np.array([a.GetFormalCharge() for a in atoms], float),
        "aromatic": np.array([float(a.GetIsAromatic()) for a in atoms]),
        "hydrogens": np.array([a.GetTotalNumHs() for a in atoms], float)}
    edges = [(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in bonds]
    edge_labels = {
        "order": np.array([_BOND_ORDERS.get(str(b.GetBondType()), 1.0) for b in bonds]),
        "ring": np.array([float(b.IsInRing()) for b in bonds])}
    return LabeledGraph.from_edges(len(atoms), edges, None, node_labels, edge_labels)


def as_labeled_graph(graph):
    """`graph` as a LabeledGraph: LabeledGraphs as they are, networkx
    graphs through from_networkx, RDKit molecules through from_molecule."""
    if isinstance(graph, LabeledGraph):
        return graph
    if hasattr(graph, "GetAtoms") and hasattr(graph, "GetBonds"):
        return from_molecule(graph)
    if hasattr(graph, "nodes") and hasattr(graph, "edges"):
        if graph.is_directed():
            raise ValueError("the marginalized kernel compares undirected graphs; got a "
                             "directed networkx graph (use graph.to_undirected())")
        return from_networkx(graph)
    raise TypeError(f"cannot make a labeled graph of a {type(graph).__name__} (expected a "
                    "LabeledGraph, a networkx graph or an RDKit molecule)")


# ---------------------------------------------------------------------------
# A scikit-learn-style kernel (GraphDot's MarginalizedGraphKernel)
# ---------------------------------------------------------------------------

class ConvergenceError(RuntimeError):
    """Pairs whose conjugate gradient did not converge within the cap."""

    def __init__(self, pairs, maxiter):
        self.pairs = pairs
        shown = ", ".join(f"({a}, {b})" for a, b in pairs[:8])
        more = f" and {len(pairs) - 8} more" if len(pairs) > 8 else ""
        super().__init__(f"{len(pairs)} pair(s) did not converge within {maxiter} "
                         f"iterations: {shown}{more} (raise maxiter or the stopping "
                         "probability q)")


class MarginalizedGraphKernel:
    """The marginalized graph kernel between graphs (LabeledGraphs,
    networkx graphs, RDKit molecules), GraphDot-style:

        kernel = MarginalizedGraphKernel(
            TensorProduct(element=KroneckerDelta(0.5), aromatic=KroneckerDelta(0.5)),
            TensorProduct(order=KroneckerDelta(0.5)), q=0.05, normalize=True)
        K = kernel(molecules)              # [N, N] Gram matrix
        K_test = kernel(test, molecules)   # [M, N]
        kernel.diag(molecules)             # K(G, G) per graph

    usable as sklearn's precomputed kernel (SVC(kernel='precomputed'),
    GaussianProcessRegressor through a precomputed Gram matrix). On the
    GPU (`device='cuda'`) the `kron` dialect's solver runs (float32, one
    thread block per pair, compiled once per kernel configuration); on the
    CPU (`device='cpu'`) the float64 reference. Pairs that do not converge
    within `maxiter` raise ConvergenceError (or, with
    `raise_on_failure=False`, stay in the result, their indices in
    `self.failed_pairs`). `degrees='scaled'` takes GraphDot's degrees
    (sum / (1 - q)) instead of the solver paper's (sum + q): its
    normalized Gram matrix is then GraphDot's (unnormalized, GraphDot's
    values are n n' / q^2 times these: its starting probabilities are 1
    and its right-hand side D_x 1)."""

    def __init__(self, node_kernel, edge_kernel, q=0.05, tol=1e-6, maxiter=1000,
                 normalize=False, order="auto", device=None, raise_on_failure=True,
                 degrees="additive"):
        if not 0 < q < 1:
            raise ValueError(f"the stopping probability q must be in (0, 1), got {q}")
        _check_degrees(degrees)
        self.degrees = degrees
        kernel_attribute(node_kernel)
        kernel_attribute(edge_kernel)
        self.node_kernel, self.edge_kernel = node_kernel, edge_kernel
        self.q, self.tol, self.maxiter = float(q), float(tol), int(maxiter)
        self.normalize, self.order = normalize, order
        self.device = device
        self.raise_on_failure = raise_on_failure
        self.failed_pairs = []
        self._programs = {}

    def _device(self):
        if self.device is not None:
            return self.device
        try:
            import torch
            return "cuda" if torch.cuda.is_available() else "cpu"
        except ImportError:
            return "cpu"

    def __call__(self, X, Y=None, nodal=False):
        """The Gram matrix [len(X), len(Y)]; `nodal`: the node-wise
        similarities [nodes of X, nodes of Y] (graph by graph, each graph's
        nodes in its order), whose block means are the Gram matrix."""
        X = [as_labeled_graph(g) for g in X]
        Y = None if Y is None else [as_labeled_graph(g) for g in Y]
        if nodal and self.normalize:
            raise ValueError("node-wise similarities are not normalized: make the kernel "
                             "with normalize=False")
        if self._device() == "cpu":
            return self._cpu_nodal(X, Y) if nodal else self._cpu(X, Y)
        return self._gpu(X, Y, nodal)

    def diag(self, X):
        """K(G, G) of each graph of X (normalized: ones)."""
        X = [as_labeled_graph(g) for g in X]
        if self.normalize:
            return np.ones(len(X))
        return np.array([self._pair(g, g) for g in X]) if self._device() == "cpu" else \
            np.concatenate([np.diag(self._gpu([g], None)) for g in X])

    def _pair(self, g, h):
        try:
            return kernel(g, h, self.node_kernel, self.edge_kernel, self.q, None, self.tol,
                          self.maxiter, self.degrees)
        except RuntimeError:
            return None

    def _pairs(self, X, Y):
        """The (kind, a, b) rows of the CPU's schedule (pair_schedule's
        rows, by cost: product nodes, 16 per pair of edges)."""
        def sizes(graphs, of):
            return np.stack([np.zeros(len(graphs), np.int64),
                             np.array([of(g) for g in graphs], np.int64)], 1)

        nodes = [sizes(G, lambda g: g.num_nodes) for G in (X, Y or X)]
        edges = [sizes(G, lambda g: int(np.count_nonzero(g.adjacency))) for G in (X, Y or X)]
        pairs = pair_schedule(nodes[0], edges[0], None if Y is None else nodes[1],
                              None if Y is None else edges[1], self.normalize)
        return pairs.astype(np.int64)

    def partial(self, X, Y, select, share=None):
        """The Gram entries of some pairs: `select(kind, a, b)` of the
        schedule's rows (pair_schedule's, dearest first; NumPy arrays, or
        tensors on the GPU) gives (owned, needed) — the entries to return
        and the rows to solve (owned ones and the self-kernels a normalized
        entry divides by); None: all. Returns (k, iterations) [len(X), len(Y)] with the
        owned entries (X against itself: both triangles) and zeros
        elsewhere; iterations <= 0 mark pairs that did not converge (the
        CPU's: 1 or -1). finish() turns a sum of such parts into the
        kernel's result (kge.distributed.gram). `share`: how the GPU's
        per-graph preparation (packing, node orders, octiles) is shared out
        (pack_shared, octiles_shared)."""
        if self._device() == "cpu":
            return self._cpu_partial(X, Y, select)
        return self._gpu_partial(X, Y, select, share)

    def finish(self, k, iterations):
        """The result of one or several partial() parts summed (NumPy
        arrays or tensors)."""
        if hasattr(k, "cpu"):
            # The failures found where the counts are; only the values copied.
            import torch
            failed = torch.nonzero(iterations <= 0).cpu().numpy()
            k = _to_host(k) if k.is_cuda else k.numpy()
        else:
            failed = np.argwhere(np.asarray(iterations) <= 0)
        failed = [tuple(map(int, p)) for p in failed]
        return self._finish(np.asarray(k, np.float64), failed)

    @staticmethod
    def _owned(pairs, owned, shape, symmetric):
        mask = np.zeros(shape, bool)
        rows = pairs[owned & (pairs[:, 0] == 0)]
        mask[rows[:, 1], rows[:, 2]] = True
        if symmetric:
            mask[rows[:, 2], rows[:, 1]] = True
        return mask

    def _cpu(self, X, Y):
        return self.finish(*self._cpu_partial(X, Y, None))

    def _cpu_partial(self, X, Y, select):
        symmetric = Y is None
        Yl = X if symmetric else Y
        pairs = self._pairs(X, Y)
        kind, a, b = pairs[:, 0], pairs[:, 1], pairs[:, 2]
        owned = needed = np.ones(len(pairs), bool)
        if select is not None:
            owned, needed = select(kind, a, b)
        k = np.zeros((len(X), len(Yl)))
        status = np.zeros((len(X), len(Yl)), np.int32)
        dx, dy = np.full(len(X), np.nan), np.full(len(Yl), np.nan)
        for (what, i, j), own in zip(pairs[needed], owned[needed]):
            g, h = (X[i], Yl[j]) if what == 0 else ((X[i], X[i]) if what == 1 else (Yl[j], Yl[j]))
            value = self._pair(g, h)
            value = np.nan if value is None else value
            if what == 0 and own:
                k[i, j], status[i, j] = value, 1 if value == value else -1
            if (what == 0 and symmetric and i == j) or what == 1:
                dx[i] = value
            if what == 2:
                dy[j] = value
        mask = self._owned(pairs, owned, k.shape, symmetric)
        if symmetric:
            k = np.where(mask, np.triu(k) + np.triu(k, 1).T, 0.0)
            status = np.where(mask, np.triu(status) + np.triu(status, 1).T, 0)
            dy = dx
        if self.normalize:
            with np.errstate(invalid="ignore"):
                k = np.where(mask, k / np.sqrt(np.outer(dx, dy)), 0.0)
        return k, status

    def _cpu_nodal(self, X, Y):
        symmetric = Y is None
        Y = X if symmetric else Y
        starts_x = np.r_[0, np.cumsum([g.num_nodes for g in X])]
        starts_y = np.r_[0, np.cumsum([g.num_nodes for g in Y])]
        s = np.full((starts_x[-1], starts_y[-1]), np.nan)
        failed = []
        for a, g in enumerate(X):
            for b, h in enumerate(Y):
                if symmetric and b < a:
                    continue
                try:
                    x = nodewise(g, h, self.node_kernel, self.edge_kernel, self.q, self.tol,
                                 self.maxiter, self.degrees)
                except RuntimeError:
                    failed.append((a, b))
                    continue
                s[starts_x[a]:starts_x[a + 1], starts_y[b]:starts_y[b + 1]] = x
                if symmetric:
                    s[starts_x[b]:starts_x[b + 1], starts_y[a]:starts_y[a + 1]] = x.T
        return self._finish(s, failed)

    def _program(self, X, Y, nodal, share=None):
        nodes = _feature_names(self.node_kernel, X + (Y or []), "node")
        edges = _feature_names(self.edge_kernel, X + (Y or []), "edge")
        key = (tuple(nodes), tuple(edges), Y is None, nodal)
        if key not in self._programs:
            bundle = compile_gram(self.node_kernel, self.edge_kernel, nodes, edges, self.q,
                                  self.tol, self.maxiter, self.normalize, Y is None, self.order,
                                  degrees=self.degrees, nodal=nodal)
            self._programs[key] = (bundle, bundle.load())
        bundle, program = self._programs[key]
        return (bundle, program, pack_shared(X, nodes, edges, share),
                None if Y is None else pack_shared(Y, nodes, edges, share))

    def _gpu(self, X, Y, nodal=False):
        if not nodal:
            import time
            k, iterations = self._gpu_partial(X, Y, None)
            start = time.perf_counter()
            result = self.finish(k, iterations)
            self.timings["finish"] = time.perf_counter() - start
            return result
        bundle, program, packed_x, packed_y = self._program(X, Y, nodal)
        return self.finish(*run_gram(bundle, packed_x, packed_y, device=self._device(),
                                     program=program))

    def _gpu_partial(self, X, Y, select, share=None):
        """partial() on the GPU: (k, iterations) as PyTorch tensors on the
        kernel's device, the pair schedule made there
        (pair_schedule_tensor); `self.timings` holds the seconds of the
        preparation ("prepare": "pack", node orders and "octiles",
        "schedule", "arguments") and of the "solve"."""
        import time
        import torch
        start = time.perf_counter()
        device = self._device()
        bundle, program, packed_x, packed_y = self._program(X, Y, False, share)
        packed = time.perf_counter()
        arrays = gram_inputs(packed_x, packed_y)
        name, fields = schedule_parameter(bundle)
        work, work_fields = schedule_parameter(bundle, "solver_workspace")
        # The octiles on the host, the schedule and the workspace below.
        derived = derived_arrays(bundle, arrays, share, functions={"octiles"})
        tiled = time.perf_counter()
        given = {**arrays, **derived}
        symmetric = fields["symmetric"] == "true"
        pairs = pair_schedule_tensor(given[fields["x_nodes"]], given[fields["x_tiles"]],
                                     None if symmetric else given[fields["y_nodes"]],
                                     None if symmetric else given[fields["y_tiles"]],
                                     fields["normalize"] == "true", device)
        if select is not None:
            owned, needed = select(pairs[:, 0], pairs[:, 1], pairs[:, 2])
            part = pairs[needed]
        else:
            owned = needed = None
            part = pairs
        derived[name] = part
        derived[work] = workspace_size_tensor(
            part, given[fields["x_nodes"]], None if symmetric else given[fields["y_nodes"]],
            int(work_fields["blocks"]), int(work_fields["vectors"]))
        scheduled = time.perf_counter()
        tensors = gram_arguments(bundle, packed_x, packed_y, device, given=derived)
        prepared = time.perf_counter()
        results = program(**tensors)
        k, iterations = results["gram"], results["iterations"]
        # The entries this part holds: those its pairs wrote (the others
        # stay NaN with 0 iterations), less the self-kernels solved here
        # only to normalize by, which another part owns.
        written = (iterations != 0) | ~torch.isnan(k)
        if select is not None:
            borrowed = pairs[needed & ~owned]
            borrowed = borrowed[(borrowed[:, 0] == 0) & (borrowed[:, 1] == borrowed[:, 2])]
            index = borrowed[:, 1].long()
            written[index, index] = False
        zero = torch.zeros((), dtype=k.dtype, device=k.device)
        k = torch.where(written, k, zero)
        iterations = torch.where(written, iterations, torch.zeros_like(iterations))
        torch.cuda.synchronize(k.device)
        self.timings = {"prepare": prepared - start, "pack": packed - start,
                        "octiles": tiled - packed, "schedule": scheduled - tiled,
                        "arguments": prepared - scheduled,
                        "solve": time.perf_counter() - prepared}
        return k, iterations

    def _finish(self, k, failed):
        self.failed_pairs = failed
        if failed and self.raise_on_failure:
            raise ConvergenceError(failed, self.maxiter)
        return k


#: Bytes of each of the two pinned staging buffers per device (_to_host).
STAGING_BYTES = 32 << 20
_STAGING = {}


def _to_host(k):
    """The CUDA tensor `k` as a new float64 NumPy array, copied through two
    pinned staging buffers per device and dtype (allocated once, reused):
    chunk i+1 is copied while chunk i is converted, so the copy runs at
    pinned speed with bounded pinned memory (2 x STAGING_BYTES) whatever
    the matrix's size."""
    import threading
    import torch
    flat = k.detach().reshape(-1)
    total = flat.numel()
    out = np.empty(total, np.float64)
    if total == 0:
        return out.reshape(tuple(k.shape))
    lock, buffers = _STAGING.setdefault((k.device, k.dtype), (threading.Lock(), []))
    with lock:
        if not buffers:
            chunk = max(1, STAGING_BYTES // flat.element_size())
            buffers.extend(torch.empty(chunk, dtype=k.dtype, pin_memory=True)
                           for _ in range(2))
        chunk = buffers[0].numel()
        with torch.cuda.device(k.device):
            stream = torch.cuda.current_stream()
            events = [torch.cuda.Event(), torch.cuda.Event()]

            def copy(which, start, stop):
                buffers[which][:stop - start].copy_(flat[start:stop], non_blocking=True)
                events[which].record(stream)

            def drain(which, start, stop):
                events[which].synchronize()
                out[start:stop] = buffers[which][:stop - start].numpy()
            _staged(total, chunk, copy, drain)
    return out.reshape(tuple(k.shape))


def _staged(total, chunk, copy, drain):
    """_to_host's schedule over two buffers: copy(which, start, stop) of
    chunk i+1 (into buffer i+1 mod 2, asynchronous) is issued before
    drain(...) of chunk i, which waits for its copy and reads it; a
    buffer's chunk is drained before the buffer is copied into again."""
    pending = None
    for index, start in enumerate(range(0, total, chunk)):
        stop, which = min(total, start + chunk), index % 2
        copy(which, start, stop)
        if pending is not None:
            drain(*pending)
        pending = (which, start, stop)
    if pending is not None:
        drain(*pending)


# ---------------------------------------------------------------------------
# Datasets: RDKit molecules, protein segments from PDB files, synthetic
# graphs of the paper's types
# ---------------------------------------------------------------------------

#: Where Debian's rdkit-data package puts RDKit's data files.
RDKIT_DATA = "/usr/share/RDKit"


def nci_molecules(count=2000, path=None):
    """The first `count` parseable molecules of the NCI set that Debian's
    rdkit-data ships (Data/NCI/first_5K.smi, SMILES), as RDKit molecules."""
    from rdkit import Chem, RDLogger
    import pathlib
    path = pathlib.Path(path or f"{RDKIT_DATA}/Data/NCI/first_5K.smi")
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: install Debian's rdkit-data package")
    RDLogger.DisableLog("rdApp.*")
    molecules = []
    for line in path.read_text().splitlines():
        fields = line.split()
        molecule = Chem.MolFromSmiles(fields[0]) if fields else None
        if molecule is not None and molecule.GetNumAtoms() > 0:
            molecules.append(molecule)
        if len(molecules) == count:
            break
    return molecules


#: The PDB files of rdkit-data whose protein chains are cut into segments.
PDB_FILES = ("Contrib/CalcLigRMSD/data/5dpv.pdb", "Contrib/CalcLigRMSD/data/5dt0.pdb",
             "Contrib/CalcLigRMSD/data/6c83.pdb",
             "Contrib/CalcLigRMSD/data/aurka_protein_2c6e.pdb")


def smooth_cutoff(distance, cutoff):
    """The PDB-3k adjacency weight: (1 - (d / cutoff)^2)^2 below the
    cutoff, decaying smoothly to zero at it."""
    x = np.asarray(distance, float) / cutoff
    return np.where(x < 1, (1 - x * x) ** 2, 0.0)


def protein_segments(paths=None, residues=25, cutoff=5.0):
    """Protein graphs in the PDB-3k range (under ~3000 Da: segments of
    `residues` consecutive amino-acid residues of each chain of the PDB
    files rdkit-data ships): heavy atoms are nodes labeled `element`
    (atomic number); atoms closer than `cutoff` angstroms are joined by an
    edge weighted by smooth_cutoff and labeled `distance`."""
    from rdkit import Chem, RDLogger
    import pathlib
    RDLogger.DisableLog("rdApp.*")
    graphs = []
    for name in paths or PDB_FILES:
        path = pathlib.Path(name if pathlib.Path(name).is_absolute() else f"{RDKIT_DATA}/{name}")
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: install Debian's rdkit-data package")
        molecule = Chem.MolFromPDBFile(str(path), removeHs=True, sanitize=False,
                                       proximityBonding=False)
        if molecule is None:
            raise ValueError(f"RDKit cannot read {path}")
        position = molecule.GetConformer().GetPositions()
        groups = {}
        for atom in molecule.GetAtoms():
            info = atom.GetPDBResidueInfo()
            if atom.GetAtomicNum() <= 1 or info is None or info.GetIsHeteroAtom():
                continue
            key = (info.GetChainId(), info.GetResidueNumber())
            groups.setdefault(key, []).append(atom.GetIdx())
        chains = {}
        for (chain, number), atoms in sorted(groups.items()):
            chains.setdefault(chain, []).append(atoms)
        for chain_residues in chains.values():
            for start in range(0, len(chain_residues) - residues + 1, residues):
                atoms = [i for r in chain_residues[start:start + residues] for i in r]
                xyz = position[atoms]
                d = np.linalg.norm(xyz[:, None] - xyz[None], axis=-1)
                i, j = np.nonzero(np.triu(d < cutoff, 1))
                graphs.append(LabeledGraph.from_edges(
                    len(atoms), np.stack([i, j], 1), smooth_cutoff(d[i, j], cutoff),
                    {"element": np.array([molecule.GetAtomWithIdx(a).GetAtomicNum()
                                          for a in atoms], float)},
                    {"distance": d[i, j]}))
    return graphs


def random_labeled_graph(rng, n, p, node_features=("label",), edge_features=("length",)):
    """A random graph for tests: n nodes, each pair joined with
    probability p (weights in [0.5, 1.5]), with the labels named among
    `label` (integers 0-2) and `charge` (normal) per node and `length`
    (in [0.5, 2]) and `kind` (0 or 1) per edge."""
    a = np.triu(rng.random((n, n)) < p, 1)
    edges = np.argwhere(a)
    labels = {"label": rng.integers(0, 3, n), "charge": rng.normal(0, 1, n)}
    edge_labels = {"length": rng.uniform(0.5, 2.0, len(edges)),
                   "kind": rng.integers(0, 2, len(edges)).astype(float)}
    return LabeledGraph.from_edges(
        n, edges, weights=rng.uniform(0.5, 1.5, len(edges)),
        node_labels={k: labels[k] for k in node_features},
        edge_labels={k: edge_labels[k] for k in edge_features})


def synthetic_graphs(kind, count=160, nodes=96, seed=0):
    """Unlabeled graphs of the paper's synthetic sets, through networkx:
    `nws` (Newman-Watts-Strogatz, k = 3, p = 0.1), `ba` (Barabasi-Albert,
    m = 6) or `geometric` (random geometric graphs in the unit square,
    radius giving about six neighbours per node); `nodes` an int or a
    sequence (one size per graph)."""
    import networkx as nx
    sizes = [nodes] * count if np.isscalar(nodes) else list(nodes)
    graphs = []
    for n, size in enumerate(sizes):
        s = seed * 100003 + n
        if kind == "nws":
            g = nx.newman_watts_strogatz_graph(size, 3, 0.1, seed=s)
        elif kind == "ba":
            g = nx.barabasi_albert_graph(size, min(6, size - 1), seed=s)
        elif kind == "geometric":
            g = nx.random_geometric_graph(size, float(np.sqrt(6 / (np.pi * size))), seed=s)
        else:
            raise ValueError(f"unknown synthetic graph kind {kind!r} (nws, ba, geometric)")
        graphs.append(from_networkx(g, node_labels=[], edge_labels=[]))
    return graphs
