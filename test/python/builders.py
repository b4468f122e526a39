"""The examples built op by op through the IR builder API
(kge.ir.Builder), as a compiler embedding KGE would emit them."""

from kge import ir


def _function(name, params):
    ctx = ir.Context()
    b = ir.Builder(ctx)
    module = b.create_module()
    types = {"T": ir.Type.table(ctx, [None, None]), "M": ir.Type.table(ctx, [None, None, None]),
             "I": ir.Type.indices(ctx)}
    f = b.create_function(module, name, [(p, types[k]) for p, k in params])
    return ctx, b, module, {p: f.argument(p) for p, _ in params}


TRANS_PARAMS = [("Eemb", "T"), ("Remb", "T"), ("h", "I"), ("r", "I"), ("t", "I")]


def transe(name, p):
    _, b, module, a = _function(name, TRANS_PARAMS)
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel = b.gather_vec(a["Remb"], a["r"])
    b.ret([b.norm(b.add(b.sub(head, tail), rel), p)])
    return module


def transh():
    _, b, module, a = _function("transh", [("Eemb", "T"), ("Remb", "T"), ("Pv", "T"),
                                           ("h", "I"), ("r", "I"), ("t", "I")])
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel, normal = b.gather_vec(a["Remb"], a["r"]), b.gather_vec(a["Pv"], a["r"])
    diff = b.sub(head, tail)
    projection = b.scal_mul_vec(b.vec_mul_vec(normal, diff), normal)
    b.ret([b.norm(b.sub(b.add(diff, rel), projection), 2)])
    return module


def transr():
    _, b, module, a = _function("transr", [("Eemb", "T"), ("Remb", "T"), ("Pm", "M"),
                                           ("h", "I"), ("r", "I"), ("t", "I")])
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel, proj = b.gather_vec(a["Remb"], a["r"]), b.gather_mat(a["Pm"], a["r"])
    b.ret([b.norm(b.add(b.vec_mul_mat(b.sub(head, tail), proj), rel), 2)])
    return module


def transf():
    ctx, b, module, a = _function("transf", TRANS_PARAMS)
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel = b.gather_vec(a["Remb"], a["r"])
    ht = b.vec_mul_vec(head, tail)
    two = b.constant(ir.Type.scalar(ctx), 2.0)
    b.ret([b.add(b.mul(two, ht), b.vec_mul_vec(b.sub(tail, head), rel))])
    return module


def rescal():
    _, b, module, a = _function("rescal", [("Eemb", "T"), ("Pm", "M"), ("h", "I"), ("r", "I"),
                                           ("t", "I")])
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel = b.gather_mat(a["Pm"], a["r"])
    b.ret([b.vec_mul_vec(b.vec_mul_mat(head, rel), tail)])
    return module


def distmult():
    _, b, module, a = _function("distmult", TRANS_PARAMS)
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    rel = b.gather_vec(a["Remb"], a["r"])
    b.ret([b.vec_mul_vec(b.mul(head, rel), tail)])
    return module


def complex_():
    _, b, module, a = _function("complex", [("Ere", "T"), ("Eim", "T"), ("Rre", "T"),
                                            ("Rim", "T"), ("h", "I"), ("r", "I"), ("t", "I")])
    hre, him = b.gather_vec(a["Ere"], a["h"]), b.gather_vec(a["Eim"], a["h"])
    tre, tim = b.gather_vec(a["Ere"], a["t"]), b.gather_vec(a["Eim"], a["t"])
    rre, rim = b.gather_vec(a["Rre"], a["r"]), b.gather_vec(a["Rim"], a["r"])
    real = b.sub(b.mul(hre, rre), b.mul(him, rim))
    imag = b.add(b.mul(hre, rim), b.mul(him, rre))
    b.ret([b.add(b.vec_mul_vec(real, tre), b.vec_mul_vec(imag, tim))])
    return module


def rotate():
    _, b, module, a = _function("rotate", [("Ere", "T"), ("Eim", "T"), ("Rph", "T"),
                                           ("h", "I"), ("r", "I"), ("t", "I")])
    hre, him = b.gather_vec(a["Ere"], a["h"]), b.gather_vec(a["Eim"], a["h"])
    tre, tim = b.gather_vec(a["Ere"], a["t"]), b.gather_vec(a["Eim"], a["t"])
    phase = b.gather_vec(a["Rph"], a["r"])
    rre, rim = b.cos(phase), b.sin(phase)
    real = b.sub(b.sub(b.mul(hre, rre), b.mul(him, rim)), tre)
    imag = b.sub(b.add(b.mul(hre, rim), b.mul(him, rre)), tim)
    modulus = b.sqrt(b.add(b.mul(real, real), b.mul(imag, imag)))
    b.ret([b.reduce(modulus, "sum")])
    return module


def transd():
    _, b, module, a = _function("transd", [("Eemb", "T"), ("Ep", "T"), ("Remb", "T"),
                                           ("Rp", "T"), ("h", "I"), ("r", "I"), ("t", "I")])
    head, tail = b.gather_vec(a["Eemb"], a["h"]), b.gather_vec(a["Eemb"], a["t"])
    hp, tp = b.gather_vec(a["Ep"], a["h"]), b.gather_vec(a["Ep"], a["t"])
    rel, rp = b.gather_vec(a["Remb"], a["r"]), b.gather_vec(a["Rp"], a["r"])
    head = b.add(head, b.scal_mul_vec(b.vec_mul_vec(hp, head), rp))
    tail = b.add(tail, b.scal_mul_vec(b.vec_mul_vec(tp, tail), rp))
    b.ret([b.norm(b.sub(b.add(head, rel), tail), 2)])
    return module


def simple():
    ctx, b, module, a = _function("simple", [("EH", "T"), ("ET", "T"), ("R", "T"),
                                             ("Rinv", "T"), ("h", "I"), ("r", "I"), ("t", "I")])
    forward = b.vec_mul_vec(b.mul(b.gather_vec(a["EH"], a["h"]), b.gather_vec(a["R"], a["r"])),
                            b.gather_vec(a["ET"], a["t"]))
    backward = b.vec_mul_vec(
        b.mul(b.gather_vec(a["EH"], a["t"]), b.gather_vec(a["Rinv"], a["r"])),
        b.gather_vec(a["ET"], a["h"]))
    both = b.add(forward, backward)
    b.ret([b.mul(b.constant(ir.Type.scalar(ctx), 0.5), both)])
    return module


def crosse():
    _, b, module, a = _function("crosse", [("Eemb", "T"), ("Remb", "T"), ("Cemb", "T"),
                                           ("Bias", "T"), ("h", "I"), ("r", "I"), ("t", "I")])
    crossed = b.mul(b.gather_vec(a["Cemb"], a["r"]), b.gather_vec(a["Eemb"], a["h"]))
    hidden = b.tanh(b.add(b.add(crossed, b.mul(crossed, b.gather_vec(a["Remb"], a["r"]))),
                          b.gather_vec(a["Bias"], a["r"])))
    b.ret([b.sigmoid(b.vec_mul_vec(hidden, b.gather_vec(a["Eemb"], a["t"])))])
    return module


BUILDERS = {
    "transe_l1": lambda: transe("transe_l1", 1),
    "transe_l2": lambda: transe("transe_l2", 2),
    "transh": transh, "transr": transr, "transf": transf, "rescal": rescal,
    "distmult": distmult, "complex": complex_, "rotate": rotate, "transd": transd,
    "simple": simple, "crosse": crosse,
}
