"""Score functions written in `linalg` and `tensor` as a compiler that
emits linalg writes them (torch-mlir's lowering of aten.embedding is a
linalg.generic with tensor.extract), for bvec-raise-linalg's tests; each
with its NumPy reference."""

import numpy as np

HEADER = """#row = affine_map<(b, d) -> (b)>
#id = affine_map<(b, d) -> (b, d)>
#edge = affine_map<(b) -> (b)>
"""


def gather(result, table, indices, dim):
    return f"""
  {result} = linalg.generic {{indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}}
      ins({indices} : tensor<?xi64>) outs(%e : tensor<?x{dim}xf32>) {{
    ^bb0(%i: i64, %o: f32):
      %d = linalg.index 1 : index
      %ii = arith.index_cast %i : i64 to index
      %v = tensor.extract {table}[%ii, %d] : tensor<?x{dim}xf32>
      linalg.yield %v : f32
  }} -> tensor<?x{dim}xf32>"""


def elementwise(result, inputs, body, dim, broadcast=()):
    """`body` computes %y from %a, %b, ... (the inputs' elements)."""
    names = "abcdefgh"
    maps = ", ".join("#row" if i in broadcast else "#id" for i in range(len(inputs)))
    args = ", ".join(f"%{names[i]}: f32" for i in range(len(inputs)))
    types = ", ".join(("tensor<?xf32>" if i in broadcast else f"tensor<?x{dim}xf32>")
                      for i in range(len(inputs)))
    return f"""
  {result} = linalg.generic {{indexing_maps = [{maps}, #id], iterator_types = ["parallel", "parallel"]}}
      ins({", ".join(inputs)} : {types}) outs(%e : tensor<?x{dim}xf32>) {{
    ^bb0({args}, %o: f32):
      {body}
      linalg.yield %y : f32
  }} -> tensor<?x{dim}xf32>"""


def reduce_sum(result, inputs, body, dim):
    names = "abcdefgh"
    args = ", ".join(f"%{names[i]}: f32" for i in range(len(inputs)))
    maps = ", ".join("#id" for _ in inputs)
    types = ", ".join(f"tensor<?x{dim}xf32>" for _ in inputs)
    return f"""
  {result} = linalg.generic {{indexing_maps = [{maps}, #row], iterator_types = ["parallel", "reduction"]}}
      ins({", ".join(inputs)} : {types}) outs(%z : tensor<?xf32>) {{
    ^bb0({args}, %acc: f32):
      {body}
      %s = arith.addf %y, %acc : f32
      linalg.yield %s : f32
  }} -> tensor<?xf32>"""


def per_edge(result, input_, body):
    return f"""
  {result} = linalg.generic {{indexing_maps = [#edge, #edge], iterator_types = ["parallel"]}}
      ins({input_} : tensor<?xf32>) outs(%eb : tensor<?xf32>) {{
    ^bb0(%a: f32, %o: f32):
      {body}
      linalg.yield %y : f32
  }} -> tensor<?xf32>"""


def function(name, tables, indices, dim, body, result):
    params = [f"%{t}: tensor<?x{dim}xf32> {{kge.name = \"{t}\"}}" for t in tables]
    params += [f"%{i}: tensor<?xi64> {{kge.name = \"{i}\"}}" for i in indices]
    return HEADER + f"""
func.func @{name}({", ".join(params)}) -> tensor<?xf32> {{
  %c0 = arith.constant 0 : index
  %n = tensor.dim %{indices[0]}, %c0 : tensor<?xi64>
  %e = tensor.empty(%n) : tensor<?x{dim}xf32>
  %eb = tensor.empty(%n) : tensor<?xf32>
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%eb : tensor<?xf32>) -> tensor<?xf32>
{body}
  return {result} : tensor<?xf32>
}}
"""


def transe(dim):
    body = (gather("%h_", "%E", "%h", dim) + gather("%r_", "%R", "%r", dim)
            + gather("%t_", "%E", "%t", dim)
            + elementwise("%x", ["%h_", "%r_", "%t_"],
                          "%p = arith.addf %a, %b : f32\n      %y = arith.subf %p, %c : f32", dim)
            + reduce_sum("%sq", ["%x"], "%y = arith.mulf %a, %a : f32", dim)
            + per_edge("%score", "%sq",
                       "%q = math.sqrt %a : f32\n      %y = arith.negf %q : f32"))
    text = function("transe", ["E", "R"], ["h", "r", "t"], dim, body, "%score")

    def reference(E, R, h, r, t):
        return -np.linalg.norm(E[h] + R[r] - E[t], axis=1)
    return text, reference


def distmult(dim):
    body = (gather("%h_", "%E", "%h", dim) + gather("%r_", "%R", "%r", dim)
            + gather("%t_", "%E", "%t", dim)
            + f"""
  %hr = linalg.mul ins(%h_, %r_ : tensor<?x{dim}xf32>, tensor<?x{dim}xf32>) outs(%e : tensor<?x{dim}xf32>) -> tensor<?x{dim}xf32>"""
            + reduce_sum("%score", ["%hr", "%t_"], "%y = arith.mulf %a, %b : f32", dim))
    text = function("distmult", ["E", "R"], ["h", "r", "t"], dim, body, "%score")

    def reference(E, R, h, r, t):
        return np.sum(E[h] * R[r] * E[t], axis=1)
    return text, reference


def transh(dim):
    """The head minus the tail projected off the relation's normal: a
    per-edge scalar broadcast along the vectors."""
    body = (gather("%h_", "%E", "%h", dim) + gather("%t_", "%E", "%t", dim)
            + gather("%r_", "%R", "%r", dim) + gather("%n_", "%P", "%r", dim)
            + elementwise("%diff", ["%h_", "%t_"], "%y = arith.subf %a, %b : f32", dim)
            + reduce_sum("%nd", ["%n_", "%diff"], "%y = arith.mulf %a, %b : f32", dim)
            + elementwise("%x", ["%diff", "%r_", "%nd", "%n_"],
                          "%p = arith.addf %a, %b : f32\n      %m = arith.mulf %c, %d : f32\n"
                          "      %y = arith.subf %p, %m : f32", dim, broadcast=(2,))
            + reduce_sum("%sq", ["%x"], "%y = arith.mulf %a, %a : f32", dim)
            + per_edge("%score", "%sq", "%y = math.sqrt %a : f32"))
    text = function("transh", ["E", "R", "P"], ["h", "r", "t"], dim, body, "%score")

    def reference(E, R, P, h, r, t):
        d = E[h] - E[t]
        n = P[r]
        x = d + R[r] - np.sum(n * d, axis=1, keepdims=True) * n
        return np.linalg.norm(x, axis=1)
    return text, reference


def rotate_like(dim):
    """Elementwise functions and a constant: sum(tanh(h * cos(r)) - 0.5 * t)."""
    body = (gather("%h_", "%E", "%h", dim) + gather("%r_", "%R", "%r", dim)
            + gather("%t_", "%E", "%t", dim)
            + elementwise("%x", ["%h_", "%r_", "%t_"],
                          "%cr = math.cos %b : f32\n      %p = arith.mulf %a, %cr : f32\n"
                          "      %th = math.tanh %p : f32\n      %half = arith.constant 0.5 : f32\n"
                          "      %m = arith.mulf %c, %half : f32\n      %y = arith.subf %th, %m : f32",
                          dim)
            + reduce_sum("%score", ["%x"], "%y = arith.addf %a, %zero : f32", dim))
    text = function("rotate_like", ["E", "R"], ["h", "r", "t"], dim, body, "%score")

    def reference(E, R, h, r, t):
        return np.sum(np.tanh(E[h] * np.cos(R[r])) - 0.5 * E[t], axis=1)
    return text, reference


FUNCTIONS = {"transe": transe, "distmult": distmult, "transh": transh,
             "rotate_like": rotate_like}
