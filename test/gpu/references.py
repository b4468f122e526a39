"""PyTorch references of the example score functions, in float64.

Each reference takes the arguments by name with every index array flattened
to one entry per scored edge, and returns one score per edge. Matrix models
are evaluated in chunks so that no [edges, D, D] tensor is ever built whole.
"""

import torch

CHUNK = 1024


def _chunked(fn, n):
    return torch.cat([fn(slice(i, min(i + CHUNK, n))) for i in range(0, n, CHUNK)])


def _rows(table, indices):
    return table[indices].double()


def transe(p):
    def score(Eemb, Remb, h, r, t):
        return torch.linalg.vector_norm(
            _rows(Eemb, h) - _rows(Eemb, t) + _rows(Remb, r), ord=p, dim=-1)
    return score


def transh(Eemb, Remb, Pv, h, r, t):
    d = _rows(Eemb, h) - _rows(Eemb, t)
    normal = _rows(Pv, r)
    along = (normal * d).sum(-1, keepdim=True)
    return torch.linalg.vector_norm(d + _rows(Remb, r) - along * normal, dim=-1)


def transr(Eemb, Remb, Pm, h, r, t):
    def part(s):
        d = _rows(Eemb, h[s]) - _rows(Eemb, t[s])
        projected = torch.bmm(d.unsqueeze(1), _rows(Pm, r[s])).squeeze(1)
        return torch.linalg.vector_norm(projected + _rows(Remb, r[s]), dim=-1)
    return _chunked(part, h.numel())


def transf(Eemb, Remb, h, r, t):
    head, tail, rel = _rows(Eemb, h), _rows(Eemb, t), _rows(Remb, r)
    return 2 * (head * tail).sum(-1) + ((tail - head) * rel).sum(-1)


def rescal(Eemb, Pm, h, r, t):
    def part(s):
        hm = torch.bmm(_rows(Eemb, h[s]).unsqueeze(1), _rows(Pm, r[s])).squeeze(1)
        return (hm * _rows(Eemb, t[s])).sum(-1)
    return _chunked(part, h.numel())


def distmult(Eemb, Remb, h, r, t):
    return (_rows(Eemb, h) * _rows(Remb, r) * _rows(Eemb, t)).sum(-1)


def complex_(Ere, Eim, Rre, Rim, h, r, t):
    hre, him = _rows(Ere, h), _rows(Eim, h)
    tre, tim = _rows(Ere, t), _rows(Eim, t)
    rre, rim = _rows(Rre, r), _rows(Rim, r)
    return ((hre * rre - him * rim) * tre + (hre * rim + him * rre) * tim).sum(-1)


def rotate(Ere, Eim, Rph, h, r, t):
    phase = _rows(Rph, r)
    hre, him = _rows(Ere, h), _rows(Eim, h)
    real = hre * torch.cos(phase) - him * torch.sin(phase) - _rows(Ere, t)
    imag = hre * torch.sin(phase) + him * torch.cos(phase) - _rows(Eim, t)
    return torch.sqrt(real * real + imag * imag).sum(-1)


def transd(Eemb, Ep, Remb, Rp, h, r, t):
    head, tail, rp = _rows(Eemb, h), _rows(Eemb, t), _rows(Rp, r)
    head = head + (_rows(Ep, h) * head).sum(-1, keepdim=True) * rp
    tail = tail + (_rows(Ep, t) * tail).sum(-1, keepdim=True) * rp
    return torch.linalg.vector_norm(head + _rows(Remb, r) - tail, dim=-1)


def simple(EH, ET, R, Rinv, h, r, t):
    forward = (_rows(EH, h) * _rows(R, r) * _rows(ET, t)).sum(-1)
    backward = (_rows(EH, t) * _rows(Rinv, r) * _rows(ET, h)).sum(-1)
    return 0.5 * (forward + backward)


def crosse(Eemb, Remb, Cemb, Bias, h, r, t):
    crossed = _rows(Cemb, r) * _rows(Eemb, h)
    hidden = torch.tanh(crossed + crossed * _rows(Remb, r) + _rows(Bias, r))
    return torch.sigmoid((hidden * _rows(Eemb, t)).sum(-1))


REFERENCES = {
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
