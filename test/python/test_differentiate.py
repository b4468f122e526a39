"""bvec-differentiate on the CPU path: the gradient function of every example
and of random compositions of every bvec operation against central finite
differences, in float64.

The check is a directional derivative: with random per-edge seeds s and a
random direction V of every table, the gradient function's rows summed into
their tables (G) must give <G, V> = (L(T + eps V) - L(T - eps V)) / (2 eps),
where L(T) = sum_b s[b] * score_b(T). Index arrays repeat rows, so the
scatter of duplicate rows is exercised too.
"""

import pathlib
import zlib

import numpy as np
import pytest

from kge import ir
from kge.compiler import compile_cpu, differentiate

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "bvec"
EPS = 1e-6


def _module(text):
    return ir.Module.parse(ir.Context(), text)


def _inputs(sig, rng, batch, rows):
    """Tables of `rows` rows (static item sizes from the signature, 7 for a
    symbolic one), index arrays with repeats."""
    sizes = {}
    args = {}
    for p in sig["params"]:
        if p["role"] != "table" or len(p["shape"]) < 2:
            continue
        shape = [rows] + [d if isinstance(d, int) else sizes.setdefault(d, 7 + 2 * len(sizes))
                          for d in p["shape"][1:]]
        args[p["name"]] = rng.uniform(-1, 1, shape)
    for p in sig["params"]:
        if p["role"] == "indices":
            args[p["name"]] = rng.integers(0, rows, batch).astype(np.int64)
        elif p["role"] == "table" and p["shape"] == ["B"]:
            args[p["name"]] = rng.normal(size=batch)  # a per-edge input
    return args


def _dense(grad_sig, grads, args, shape_of):
    """The rows of the gradient function summed into dense tables."""
    dense = {}
    for p in grad_sig["params"]:
        if p["role"] != "result":
            continue
        table, indices = _pair(p["name"], args)
        total = dense.setdefault(table, np.zeros(shape_of[table]))
        np.add.at(total, args[indices], grads[p["name"]])
    return dense


def _pair(result_name, args):
    """(table, index array) of a gradient result `d_<table>_<indices>`."""
    for table in args:
        for indices in args:
            if result_name == f"d_{table}_{indices}":
                return table, indices
    raise AssertionError(f"no (table, indices) pair named by {result_name}")


def check_gradient(text, name, batch=23, rows=6, seed=0, directions=3):
    module = differentiate(_module(text))
    forward = compile_cpu(module, name)
    backward = compile_cpu(module, name + "_grad")
    sig = ir.signature(module, name)
    grad_sig = ir.signature(module, name + "_grad")
    rng = np.random.default_rng(seed)
    args = _inputs(sig, rng, batch, rows)
    results = [p["name"] for p in sig["params"] if p["role"] == "result"]
    seeds = {f"d_{r}": rng.normal(size=batch) for r in results}
    grads = backward({**args, **seeds})
    tables = {n: a for n, a in args.items() if a.dtype == np.float64 and a.ndim > 1}
    dense = _dense(grad_sig, grads, args, {n: a.shape for n, a in tables.items()})
    assert dense, "the gradient function returns no gradient"

    def loss(shifted):
        out = forward({**args, **shifted})
        return sum(float(np.dot(seeds[f"d_{r}"], out[r])) for r in results)

    for _ in range(directions):
        direction = {n: rng.normal(size=a.shape) for n, a in tables.items()}
        plus = loss({n: a + EPS * direction[n] for n, a in tables.items()})
        minus = loss({n: a - EPS * direction[n] for n, a in tables.items()})
        numeric = (plus - minus) / (2 * EPS)
        analytic = sum(float(np.sum(dense[n] * direction[n])) for n in dense)
        assert abs(analytic - numeric) <= 1e-6 * max(1.0, abs(numeric)), (
            f"{name}: directional derivative {analytic} vs finite difference {numeric}")
    return module, grads


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.mlir")), ids=lambda p: p.stem)
def test_every_example_matches_finite_differences(path):
    text = path.read_text().replace("xf32>", "xf64>")
    check_gradient(text, path.stem, seed=zlib.crc32(path.stem.encode()))


@pytest.mark.parametrize("example", ["transr", "rescal"])
def test_factored_matrix_gradients_sum_to_the_matrices(example):
    """factor-matrices: each edge's outer products of the returned factors
    equal the matrix gradient without it (the other results unchanged), and
    kge.autograd.OUTER_SUM on the CPU sums them per matrix as np.add.at of
    the per-edge matrices does, a matrix without edges untouched."""
    from kge.autograd import outer_sum_query
    text = (EXAMPLES / f"{example}.mlir").read_text()
    plain = differentiate(_module(text))
    factored = differentiate(_module(text), factor_matrices=True)
    rng = np.random.default_rng(4)
    args = {k: v.astype(np.float32) if v.dtype == np.float64 else v
            for k, v in _inputs(ir.signature(plain, example), rng, 40, 6).items()}
    args["r"] = args["r"] % 5  # matrix 5 gets no edge
    seeds = {"d_score": rng.normal(size=40).astype(np.float32)}
    dense = compile_cpu(plain, example + "_grad")({**args, **seeds})
    parts = compile_cpu(factored, example + "_grad")({**args, **seeds})
    results = [p["name"] for p in ir.signature(factored, example + "_grad")["params"]
               if p["role"] == "result"]
    assert [n for n in results if n.startswith("d_Pm")] == ["d_Pm_r_u0", "d_Pm_r_v0"]
    for name in results:
        if not name.startswith("d_Pm"):
            np.testing.assert_array_equal(parts[name], dense[name])
    U, V = parts["d_Pm_r_u0"], parts["d_Pm_r_v0"]
    np.testing.assert_allclose(U[:, :, None] * V[:, None, :], dense["d_Pm_r"],
                               rtol=1e-5, atol=1e-6)
    expected = np.zeros(args["Pm"].shape)
    np.add.at(expected, args["r"], dense["d_Pm_r"])
    start = np.zeros(args["Pm"].shape, np.float32)
    summed = outer_sum_query().run_cpu(U=U, V=V, key=args["r"], C=start)
    np.testing.assert_allclose(summed, expected, rtol=1e-4, atol=1e-5)
    assert not summed[5].any()


def test_wrong_gradient_is_detected():
    """The check fails for a gradient off by a little: TransE's function
    with a 1e-4 relative change of one row of its gradient."""
    text = (EXAMPLES / "transe_l2.mlir").read_text().replace("xf32>", "xf64>")
    module = differentiate(_module(text))
    backward = compile_cpu(module, "transe_l2_grad")
    forward = compile_cpu(module, "transe_l2")
    rng = np.random.default_rng(1)
    args = _inputs(ir.signature(module, "transe_l2"), rng, 9, 5)
    seeds = rng.normal(size=9)
    grads = backward({**args, "d_score": seeds})
    grads["d_Eemb_h"][3] *= 1 + 1e-4
    direction = rng.normal(size=args["Eemb"].shape)
    dense = np.zeros_like(args["Eemb"])
    np.add.at(dense, args["h"], grads["d_Eemb_h"])
    np.add.at(dense, args["t"], grads["d_Eemb_t"])

    def loss(E):
        return float(np.dot(seeds, forward({**args, "Eemb": E})["score"]))

    numeric = (loss(args["Eemb"] + EPS * direction) - loss(args["Eemb"] - EPS * direction)) / (2 * EPS)
    assert abs(float(np.sum(dense * direction)) - numeric) > 1e-6 * max(1.0, abs(numeric))


def test_wrt_restricts_the_gradient():
    text = (EXAMPLES / "transe_l2.mlir").read_text()
    module = differentiate(_module(text), wrt=["Remb"])
    params = ir.signature(module, "transe_l2_grad")["params"]
    assert [p["name"] for p in params if p["role"] == "result"] == ["d_Remb_r"]
    # The seed is a per-edge input, passed as a [B] array.
    (seed,) = [p for p in params if p["name"] == "d_score"]
    assert seed["role"] == "table" and seed["shape"] == ["B"]


def test_subgradients_at_kinks():
    """At the non-smooth points the documented subgradients: |x| and the
    1-norm give 0 at 0, the 2-norm gives 0 at 0, max shares ties equally."""
    text = """
    bvec.func @kinks(%E: !bvec.table<?x4xf64>, %h: !bvec.indices<?xi64>, %t: !bvec.indices<?xi64>)
        -> (l1: !bvec.scalar<?xf64>, l2: !bvec.scalar<?xf64>, m: !bvec.scalar<?xf64>) {
      %a = bvec.gather_vec %E[%h] : !bvec.table<?x4xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf64>
      %b = bvec.gather_vec %E[%t] : !bvec.table<?x4xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x4xf64>
      %d = bvec.sub %a, %b : !bvec.vec<?x4xf64>
      %l1 = bvec.norm %d, p = 1 : !bvec.vec<?x4xf64> -> !bvec.scalar<?xf64>
      %l2 = bvec.norm %d, p = 2 : !bvec.vec<?x4xf64> -> !bvec.scalar<?xf64>
      %x = bvec.max %a, %b : !bvec.vec<?x4xf64>
      %m = bvec.reduce sum %x : !bvec.vec<?x4xf64> -> !bvec.scalar<?xf64>
      bvec.return %l1, %l2, %m : !bvec.scalar<?xf64>, !bvec.scalar<?xf64>, !bvec.scalar<?xf64>
    }"""
    module = differentiate(_module(text))
    E = np.arange(12, dtype=np.float64).reshape(3, 4)
    h = np.array([0, 1], dtype=np.int64)
    one, zero = np.ones(2), np.zeros(2)
    backward = compile_cpu(module, "kinks_grad")
    base = {"E": E, "h": h, "t": h}
    l1 = backward({**base, "d_l1": one, "d_l2": zero, "d_m": zero})
    l2 = backward({**base, "d_l1": zero, "d_l2": one, "d_m": zero})
    m = backward({**base, "d_l1": zero, "d_l2": zero, "d_m": one})
    for grads in (l1, l2):
        assert np.all(grads["d_E_h"] == 0) and np.all(grads["d_E_t"] == 0)
    assert np.all(m["d_E_h"] == 0.5) and np.all(m["d_E_t"] == 0.5)


class Composition:
    """A random score function over every differentiable bvec operation:
    vectors of length 8 gathered from E (by h and t) and R (by r), matrices
    8 x 6 from P and Q (by r); elementwise functions kept in their domains
    (log and sqrt of positive values, division by values >= 1)."""

    D, C = 8, 6

    def __init__(self, rng):
        self.rng = rng
        self.lines = []
        self.count = 0

    def emit(self, text, type_):
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"      {name} = {text} : {type_}")
        return name

    def vec(self, n=None):
        return f"!bvec.vec<?x{n or self.D}xf64>"

    scalar = "!bvec.scalar<?xf64>"

    def mat(self):
        return f"!bvec.mat<?x{self.D}x{self.C}xf64>"

    def const(self, value, type_):
        return self.emit(f"bvec.constant {value!r}", type_)

    def elementwise(self, x, y, n=None):
        t = self.vec(n)
        op = self.rng.choice(["add", "sub", "mul", "max", "min", "neg", "abs", "tanh",
                              "sigmoid", "sin", "cos", "exp", "log", "sqrt", "div"])
        if op in ("add", "sub", "mul", "max", "min"):
            return self.emit(f"bvec.{op} {x}, {y}", t)
        if op in ("neg", "abs", "tanh", "sigmoid", "sin", "cos"):
            return self.emit(f"bvec.{op} {x}", t)
        if op == "exp":
            bounded = self.emit(f"bvec.tanh {x}", t)
            return self.emit(f"bvec.exp {bounded}", t)
        one = self.const(1.0, t)
        if op == "log":
            positive = self.emit(f"bvec.add {self.emit(f'bvec.exp {x}', t)}, {one}", t)
            return self.emit(f"bvec.log {positive}", t)
        squared = self.emit(f"bvec.mul {y}, {y}", t)
        square = self.emit(f"bvec.add {squared}, {one}", t)
        if op == "sqrt":
            return self.emit(f"bvec.sqrt {square}", t)
        return self.emit(f"bvec.div {x}, {square}", t)

    def reduce(self, x, y, n=None):
        t = self.vec(n)
        kind = self.rng.choice(["dot", "norm1", "norm2", "sum", "mean", "max", "min"])
        if kind == "dot":
            return self.emit(f"bvec.vec_mul_vec {x}, {y}", f"{t}, {t} -> {self.scalar}")
        if kind.startswith("norm"):
            return self.emit(f"bvec.norm {x}, p = {kind[-1]}", f"{t} -> {self.scalar}")
        return self.emit(f"bvec.reduce {kind} {x}", f"{t} -> {self.scalar}")

    def matrix_step(self, v, matrices):
        """v (length D) through a matrix product and back to length D."""
        p = matrices[int(self.rng.integers(len(matrices)))]
        q = matrices[int(self.rng.integers(len(matrices)))]
        w = self.emit(f"bvec.vec_mul_mat {v}, {p}", f"{self.vec()}, {self.mat()} -> {self.vec(self.C)}")
        w = self.emit(f"bvec.tanh {w}", self.vec(self.C))
        if self.rng.random() < 0.5:
            outer = self.emit(f"bvec.vec_outer_vec {v}, {w}",
                              f"{self.vec()}, {self.vec(self.C)} -> {self.mat()}")
            q = self.emit(f"bvec.{self.rng.choice(['add', 'mul', 'sub'])} {outer}, {q}", self.mat())
        return self.emit(f"bvec.mat_mul_vec {q}, {w}", f"{self.mat()}, {self.vec(self.C)} -> {self.vec()}")

    def slice_step(self, v):
        half = self.D // 2
        lo = self.emit(f"bvec.slice {v}[0]", f"{self.vec()} -> {self.vec(half)}")
        hi = self.emit(f"bvec.slice {v}[{half}]", f"{self.vec()} -> {self.vec(half)}")
        mixed = self.elementwise(lo, hi, half)
        return self.emit(f"bvec.pad {mixed}[{half * int(self.rng.integers(2))}]",
                         f"{self.vec(half)} -> {self.vec()}")

    def build(self, steps=6):
        D, C = self.D, self.C
        table, mtable = f"!bvec.table<?x{D}xf64>", f"!bvec.table<?x{D}x{C}xf64>"
        idx = "!bvec.indices<?xi64>"
        vectors = [self.emit(f"bvec.gather_vec %E[%h]", f"{table}, {idx} -> {self.vec()}"),
                   self.emit(f"bvec.gather_vec %E[%t]", f"{table}, {idx} -> {self.vec()}"),
                   self.emit(f"bvec.gather_vec %R[%r]", f"{table}, {idx} -> {self.vec()}")]
        matrices = [self.emit(f"bvec.gather_mat %P[%r]", f"{mtable}, {idx} -> {self.mat()}"),
                    self.emit(f"bvec.gather_mat %Q[%r]", f"{mtable}, {idx} -> {self.mat()}")]
        scalars = []
        pick = lambda pool: pool[int(self.rng.integers(len(pool)))]
        for _ in range(steps):
            kind = self.rng.choice(["elementwise", "elementwise", "scale", "matrix", "slice"])
            x, y = pick(vectors), pick(vectors)
            if kind == "elementwise":
                vectors.append(self.elementwise(x, y))
            elif kind == "scale":
                s = self.reduce(x, y)
                scalars.append(s)
                vectors.append(self.emit(f"bvec.scal_mul_vec {s}, {pick(vectors)}",
                                         f"{self.scalar}, {self.vec()} -> {self.vec()}"))
            elif kind == "matrix":
                vectors.append(self.matrix_step(x, matrices))
            else:
                vectors.append(self.slice_step(x))
        # The score: the last vector reduced, plus what the scalars add.
        score = self.reduce(vectors[-1], pick(vectors))
        for s in scalars[-2:]:
            score = self.emit(f"bvec.{self.rng.choice(['add', 'mul', 'sub'])} {score}, {s}",
                              self.scalar)
        body = "\n".join(self.lines)
        return f"""
    bvec.func @random(%E: {table}, %R: {table}, %P: {mtable}, %Q: {mtable},
                      %h: {idx}, %r: {idx}, %t: {idx}) -> (score: {self.scalar}) {{
{body}
      bvec.return {score} : {self.scalar}
    }}"""


@pytest.mark.parametrize("seed", range(24))
def test_random_compositions_match_finite_differences(seed):
    text = Composition(np.random.default_rng(seed)).build(steps=4 + seed % 5)
    check_gradient(text, "random", batch=17, rows=5, seed=seed)


def test_per_edge_inputs_are_constants_of_the_gradient():
    """A per-edge input (a label, a weight) enters the gradient as a
    constant: y * |h - t|_2 + y^2 * <h, t> differentiated against finite
    differences, and no gradient is returned for y."""
    text = """
    bvec.func @weighted(%E: !bvec.table<?x6xf64>, %h: !bvec.indices<?xi64>,
                        %t: !bvec.indices<?xi64>, %y: !bvec.scalar<?xf64>)
        -> (score: !bvec.scalar<?xf64>) {
      %a = bvec.gather_vec %E[%h] : !bvec.table<?x6xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x6xf64>
      %b = bvec.gather_vec %E[%t] : !bvec.table<?x6xf64>, !bvec.indices<?xi64> -> !bvec.vec<?x6xf64>
      %d = bvec.sub %a, %b : !bvec.vec<?x6xf64>
      %n = bvec.norm %d, p = 2 : !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
      %s = bvec.mul %y, %n : !bvec.scalar<?xf64>
      %dot = bvec.vec_mul_vec %a, %b : !bvec.vec<?x6xf64>, !bvec.vec<?x6xf64> -> !bvec.scalar<?xf64>
      %yy = bvec.mul %y, %y : !bvec.scalar<?xf64>
      %w = bvec.mul %yy, %dot : !bvec.scalar<?xf64>
      %score = bvec.add %s, %w : !bvec.scalar<?xf64>
      bvec.return %score : !bvec.scalar<?xf64>
    }"""
    module, grads = check_gradient(text, "weighted", batch=19, rows=5, seed=3)
    assert sorted(grads) == ["d_E_h", "d_E_t"]
