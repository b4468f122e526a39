"""NumPy references of the example score functions, computed in float64.

Each reference takes the arguments of the example's bvec.func by name and
returns the score of every edge.
"""

import numpy as np


def _rows(table, indices):
    return table.astype(np.float64)[indices]


def transe(p):
    def score(Eemb, Remb, h, r, t):
        x = _rows(Eemb, h) - _rows(Eemb, t) + _rows(Remb, r)
        return np.linalg.norm(x, ord=p, axis=1)
    return score


def transh(Eemb, Remb, Pv, h, r, t):
    d = _rows(Eemb, h) - _rows(Eemb, t)
    normal = _rows(Pv, r)
    along = np.sum(normal * d, axis=1, keepdims=True)
    return np.linalg.norm(d + _rows(Remb, r) - along * normal, axis=1)


def transr(Eemb, Remb, Pm, h, r, t):
    d = _rows(Eemb, h) - _rows(Eemb, t)
    projected = np.einsum("bk,bkj->bj", d, Pm.astype(np.float64)[r])
    return np.linalg.norm(projected + _rows(Remb, r), axis=1)


def transf(Eemb, Remb, h, r, t):
    head, tail, rel = _rows(Eemb, h), _rows(Eemb, t), _rows(Remb, r)
    return 2 * np.sum(head * tail, axis=1) + np.sum((tail - head) * rel, axis=1)


def rescal(Eemb, Pm, h, r, t):
    hm = np.einsum("bk,bkj->bj", _rows(Eemb, h), Pm.astype(np.float64)[r])
    return np.sum(hm * _rows(Eemb, t), axis=1)


def distmult(Eemb, Remb, h, r, t):
    return np.sum(_rows(Eemb, h) * _rows(Remb, r) * _rows(Eemb, t), axis=1)


def complex_(Ere, Eim, Rre, Rim, h, r, t):
    head = _rows(Ere, h) + 1j * _rows(Eim, h)
    rel = _rows(Rre, r) + 1j * _rows(Rim, r)
    tail = _rows(Ere, t) + 1j * _rows(Eim, t)
    return np.real(np.sum(head * rel * np.conj(tail), axis=1))


def rotate(Ere, Eim, Rph, h, r, t):
    head = _rows(Ere, h) + 1j * _rows(Eim, h)
    tail = _rows(Ere, t) + 1j * _rows(Eim, t)
    return np.sum(np.abs(head * np.exp(1j * _rows(Rph, r)) - tail), axis=1)


def transd(Eemb, Ep, Remb, Rp, h, r, t):
    head, tail, rp = _rows(Eemb, h), _rows(Eemb, t), _rows(Rp, r)
    head = head + np.sum(_rows(Ep, h) * head, axis=1, keepdims=True) * rp
    tail = tail + np.sum(_rows(Ep, t) * tail, axis=1, keepdims=True) * rp
    return np.linalg.norm(head + _rows(Remb, r) - tail, axis=1)


def simple(EH, ET, R, Rinv, h, r, t):
    forward = np.sum(_rows(EH, h) * _rows(R, r) * _rows(ET, t), axis=1)
    backward = np.sum(_rows(EH, t) * _rows(Rinv, r) * _rows(ET, h), axis=1)
    return 0.5 * (forward + backward)


def crosse(Eemb, Remb, Cemb, Bias, h, r, t):
    crossed = _rows(Cemb, r) * _rows(Eemb, h)
    hidden = np.tanh(crossed + crossed * _rows(Remb, r) + _rows(Bias, r))
    return 1 / (1 + np.exp(-np.sum(hidden * _rows(Eemb, t), axis=1)))


# name -> (reference, {table: shape factory}). Shapes take (rows, length).
EXAMPLES = {
    "transe_l1": transe(1),
    "transe_l2": transe(2),
    "transh": transh,
    "transr": transr,
    "transf": transf,
    "rescal": rescal,
    "distmult": distmult,
    "complex": complex_,
    "rotate": rotate,
    "transd": transd,
    "simple": simple,
    "crosse": crosse,
}
