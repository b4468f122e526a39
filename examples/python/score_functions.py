"""The example score functions of examples/bvec/, written in KGE's
Python front end (cuKE style). Tracing each gives the same IR as the
hand-written .mlir file (test/python/test_frontend.py checks it).

    import kge
    from score_functions import FUNCTIONS
    print(FUNCTIONS["transr"].ir)
"""

import kge
from kge import Indices, Table

Matrices = Table(None, None, None)  # one matrix per row (relation)


@kge.function
def transe_l1(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
    head, tail, rel = Eemb[h], Eemb[t], Remb[r]
    return kge.norm(head - tail + rel, p=1)


@kge.function
def transe_l2(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
    head, tail, rel = Eemb[h], Eemb[t], Remb[r]
    return kge.norm(head - tail + rel, p=2)


@kge.function
def transh(Eemb: Table, Remb: Table, Pv: Table, h: Indices, r: Indices, t: Indices):
    head, tail, rel, normal = Eemb[h], Eemb[t], Remb[r], Pv[r]
    diff = head - tail
    projection = kge.dot(normal, diff) * normal
    return kge.norm(diff + rel - projection, p=2)


@kge.function
def transr(Eemb: Table, Remb: Table, Pm: Matrices, h: Indices, r: Indices, t: Indices):
    head, tail, rel, proj = Eemb[h], Eemb[t], Remb[r], Pm[r]
    return kge.norm((head - tail) @ proj + rel, p=2)


@kge.function
def transf(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
    head, tail, rel = Eemb[h], Eemb[t], Remb[r]
    return 2.0 * kge.dot(head, tail) + kge.dot(tail - head, rel)


@kge.function
def rescal(Eemb: Table, Pm: Matrices, h: Indices, r: Indices, t: Indices):
    head, tail, rel = Eemb[h], Eemb[t], Pm[r]
    return kge.dot(head @ rel, tail)


@kge.function
def distmult(Eemb: Table, Remb: Table, h: Indices, r: Indices, t: Indices):
    head, tail, rel = Eemb[h], Eemb[t], Remb[r]
    return kge.dot(head * rel, tail)


@kge.function
def complex(Ere: Table, Eim: Table, Rre: Table, Rim: Table,  # noqa: A001
            h: Indices, r: Indices, t: Indices):
    hre, him, tre, tim, rre, rim = Ere[h], Eim[h], Ere[t], Eim[t], Rre[r], Rim[r]
    real = hre * rre - him * rim
    imag = hre * rim + him * rre
    return kge.dot(real, tre) + kge.dot(imag, tim)


@kge.function
def rotate(Ere: Table, Eim: Table, Rph: Table, h: Indices, r: Indices, t: Indices):
    hre, him, tre, tim, phase = Ere[h], Eim[h], Ere[t], Eim[t], Rph[r]
    rre, rim = kge.cos(phase), kge.sin(phase)
    real = hre * rre - him * rim - tre
    imag = hre * rim + him * rre - tim
    return kge.sum(kge.sqrt(real * real + imag * imag))


@kge.function
def transd(Eemb: Table, Ep: Table, Remb: Table, Rp: Table, h: Indices, r: Indices,
           t: Indices):
    head, tail, hp, tp, rel, rp = Eemb[h], Eemb[t], Ep[h], Ep[t], Remb[r], Rp[r]
    head_projected = head + kge.dot(hp, head) * rp
    tail_projected = tail + kge.dot(tp, tail) * rp
    return kge.norm(head_projected + rel - tail_projected, p=2)


@kge.function
def simple(EH: Table, ET: Table, R: Table, Rinv: Table, h: Indices, r: Indices, t: Indices):
    forward = kge.dot(EH[h] * R[r], ET[t])
    backward = kge.dot(EH[t] * Rinv[r], ET[h])
    return 0.5 * (forward + backward)


@kge.function
def crosse(Eemb: Table, Remb: Table, Cemb: Table, Bias: Table, h: Indices, r: Indices,
           t: Indices):
    crossed = Cemb[r] * Eemb[h]
    hidden = kge.tanh(crossed + crossed * Remb[r] + Bias[r])
    return kge.sigmoid(kge.dot(hidden, Eemb[t]))


FUNCTIONS = {f.name: f for f in (transe_l1, transe_l2, transh, transr, transf, rescal,
                                  distmult, complex, rotate, transd, simple, crosse)}

if __name__ == "__main__":
    for f in FUNCTIONS.values():
        print(f.ir)
