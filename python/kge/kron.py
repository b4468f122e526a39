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
    """The labels a kernel reads: the dict for a TensorProduct, the first
    (only) feature otherwise (none: unlabeled, for Constant)."""
    if isinstance(kernel, TensorProduct):
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


def _system(g1, g2, node_kernel, edge_kernel, q, p):
    if g1.num_nodes == 0 or g2.num_nodes == 0:
        raise ValueError("the marginalized kernel needs graphs of at least one node")
    q1, p1 = _probabilities(g1, q, p)
    q2, p2 = _probabilities(g2, q, p)
    d1 = g1.adjacency.sum(1) + q1
    d2 = g2.adjacency.sum(1) + q2
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


def solve(g1, g2, node_kernel, edge_kernel, q=0.05, p=None, tol=1e-10, maxiter=None):
    """The product system's solution x ([n, n']) by conjugate gradient with
    the diagonal preconditioner, XMV on the fly; with the number of
    iterations. Raises RuntimeError when it has not converged (relative
    residual `tol`) within `maxiter` (default 10 n n') iterations."""
    return _conjugate_gradient(_system(g1, g2, node_kernel, edge_kernel, q, p), tol, maxiter)


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


def kernel(g1, g2, node_kernel, edge_kernel, q=0.05, p=None, tol=1e-10, maxiter=None):
    """K(G, G') = p_x . x, x solved by `solve`."""
    s = _system(g1, g2, node_kernel, edge_kernel, q, p)
    x, _ = _conjugate_gradient(s, tol, maxiter)
    return float((s.start * x).sum())


def nodewise(g1, g2, node_kernel, edge_kernel, q=0.05, tol=1e-10, maxiter=None):
    """The node-wise similarity [n, n']: x itself, the expected similarity
    of the walks that start at each pair of nodes (K = p_x . x weighs it
    by the starting probabilities)."""
    x, _ = solve(g1, g2, node_kernel, edge_kernel, q, None, tol, maxiter)
    return x


def dense_kernel(g1, g2, node_kernel, edge_kernel, q=0.05, p=None):
    """K(G, G') from the formed product system, solved directly (float64):
    the ground truth for small graphs."""
    s = _system(g1, g2, node_kernel, edge_kernel, q, p)
    n1, n2 = s.diagonal.shape
    m = np.diag(s.diagonal.ravel())
    (i, j), (k, l) = s.edges1, s.edges2
    rows = (i[:, None] * n2 + k[None, :]).ravel()
    cols = (j[:, None] * n2 + l[None, :]).ravel()
    np.subtract.at(m, (rows, cols), s.weights.ravel())
    x = np.linalg.solve(m, s.rhs.ravel())
    return float(s.start.ravel() @ x)


def gram(X, Y=None, node_kernel=None, edge_kernel=None, q=0.05, normalize=False,
         tol=1e-10, maxiter=None):
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
            k[a, b] = kernel(g, h, node_kernel, edge_kernel, q, None, tol, maxiter)
    if normalize:
        dx = np.array([kernel(g, g, node_kernel, edge_kernel, q, None, tol, maxiter)
                       for g in X]) if not symmetric else np.diag(k).copy()
        dy = dx if symmetric else np.array(
            [kernel(h, h, node_kernel, edge_kernel, q, None, tol, maxiter) for h in Y])
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
    a = g.adjacency > 0
    degree = a.sum(1)
    seen = np.zeros(g.num_nodes, dtype=bool)
    order = []
    for start in np.argsort(degree, kind="stable"):
        if seen[start]:
            continue
        seen[start] = True
        queue = [int(start)]
        while queue:
            node = queue.pop(0)
            order.append(node)
            neighbours = np.nonzero(a[node] & ~seen)[0]
            neighbours = neighbours[np.argsort(degree[neighbours], kind="stable")]
            seen[neighbours] = True
            queue.extend(int(v) for v in neighbours)
    return np.array(order[::-1], dtype=np.int64)


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
