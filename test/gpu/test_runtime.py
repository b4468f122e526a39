"""The runtime refuses bad bundles and bad arguments with clear errors, finds
out-of-range indices in checked mode, and stays usable afterwards."""

import json

import pytest
import torch

from conftest import BUNDLES
from references import REFERENCES


def transe_args(rows=100, length=128, batch=64, device="cuda"):
    g = torch.Generator(device=device).manual_seed(1)
    return {"Eemb": torch.randn(rows, length, device=device, generator=g),
            "Remb": torch.randn(10, length, device=device, generator=g),
            "h": torch.randint(0, rows, (batch,), device=device, generator=g),
            "r": torch.randint(0, 10, (batch,), device=device, generator=g),
            "t": torch.randint(0, rows, (batch,), device=device, generator=g)}


def assert_matches(score, args):
    ref = REFERENCES["transe_l2"](**args)
    assert torch.allclose(score.double(), ref, rtol=1e-5, atol=1e-5)


@pytest.fixture
def transe(program):
    return program("transe_l2", "pos", "D128")


def bundle_text():
    return (BUNDLES / "transe_l2.pos.D128.kgebundle").read_text()


def test_good_call_allocates_results(transe):
    args = transe_args()
    score = transe(**args)["score"]
    assert score.shape == (64,) and score.device.type == "cuda"
    assert_matches(score, args)


@pytest.mark.parametrize("edit,message", [
    (lambda b: b.update(version=7), "bundle version 7 is not supported"),
    (lambda b: b.update(format="other"), "'format' must be \"kge-bundle\""),
    (lambda b: b["launches"][-1].update(function="no_such_kernel"),
     "launches 'no_such_kernel', which is not a kernel of module"),
    (lambda b: b["modules"][0].update(cubin_base64="@@@"), "not valid base64"),
    (lambda b: b["launches"][-1].update(grid=["ceildiv(X, 32)", 1, 1]),
     "uses the size 'X', which no parameter defines"),
    (lambda b: b["library"].append("kge_missing"),
     "needs the device-library function 'kge_missing'"),
    (lambda b: b["function"]["params"].pop(0), "indexes something that is not a table"),
])
def test_corrupted_bundles_are_refused(rt, edit, message):
    bundle = json.loads(bundle_text())
    edit(bundle)
    with pytest.raises(rt.BundleError, match=message.replace("(", r"\(")):
        rt.Program(json.dumps(bundle))


def test_truncated_bundle_is_refused(rt):
    with pytest.raises(rt.BundleError, match="not valid JSON"):
        rt.Program(bundle_text()[:5000])


@pytest.mark.parametrize("change,message", [
    (lambda a: a.update(Eemb=a["Eemb"].double()), "table 'Eemb' expects dtype f32, got f64"),
    (lambda a: a.update(Eemb=a["Eemb"].bfloat16()), "table 'Eemb' expects dtype f32, got bf16"),
    (lambda a: a.update(Remb=a["Remb"].half()), "table 'Remb' expects dtype f32, got f16"),
    (lambda a: a.update(h=a["h"].int()), "indices 'h' expects dtype i64, got i32"),
    (lambda a: a.update(Eemb=a["Eemb"][:, :64].contiguous()),
     "table 'Eemb' expects size 128 in dimension 1"),
    (lambda a: a.update(t=a["t"][:10]), "indices 't' has size 10 in dimension 0 but 'B' is 64"),
    (lambda a: a.update(Eemb=a["Eemb"].cpu()), "table 'Eemb' is in host memory"),
    (lambda a: a.update(Eemb=a["Eemb"].t().contiguous().t()), "must be contiguous"),
    (lambda a: a.update(h=a["h"].reshape(8, 8)), "indices 'h' expects rank 1"),
    (lambda a: a.update(h=[1, 2, 3]), "'h' must be a CUDA array"),
    (lambda a: a.pop("r"), "missing argument 'r'"),
    (lambda a: a.update(q=a["h"]), "has no argument named 'q'"),
])
def test_bad_arguments_are_refused_and_the_program_stays_usable(rt, transe, change, message):
    args = transe_args()
    change(args)
    with pytest.raises(rt.ArgumentError, match=message):
        transe(**args)
    good = transe_args()
    assert_matches(transe(**good)["score"], good)


def test_wrong_result_shape_is_refused(rt, transe):
    args = transe_args()
    with pytest.raises(rt.ArgumentError, match="result 'score' expects shape"):
        transe(**args, out={"score": torch.empty(63, device="cuda")})


@pytest.mark.parametrize("name,position,value", [("h", 0, 100), ("t", 63, -1), ("r", 17, 10)])
def test_checked_mode_reports_the_first_bad_index(rt, transe, name, position, value):
    args = transe_args()
    args[name][position] = value
    if position < 63:
        args[name][position + 1] = 10**6  # a later bad index is not the first
    with pytest.raises(rt.IndexRangeError,
                       match=rf"index {value} at position {position} of '{name}' is out of range"):
        transe(**args, checked=True)
    good = transe_args()
    assert_matches(transe(**good, checked=True)["score"], good)


def test_cuda_array_interface_and_dlpack_inputs(rt, transe):
    cupy = pytest.importorskip("cupy")
    args = transe_args()
    cupy_args = {k: cupy.asarray(v) for k, v in args.items()}
    result = transe(**cupy_args)["score"]
    assert isinstance(result, rt.DeviceBuffer)
    assert_matches(torch.as_tensor(cupy.asarray(result), device="cuda"), args)

    class OnlyDLPack:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, stream=None):
            return self.tensor.__dlpack__()

    wrapped = {k: OnlyDLPack(v) for k, v in args.items()}
    out = torch.empty(64, device="cuda")
    transe(**wrapped, out={"score": out})
    assert_matches(out, args)


def test_streams(transe):
    args = transe_args()
    stream = torch.cuda.Stream()
    out = torch.empty(64, device="cuda")
    with torch.cuda.stream(stream):
        transe(**args, out={"score": out}, stream=stream.cuda_stream)
    stream.synchronize()
    assert_matches(out, args)


def test_empty_batch(transe):
    args = transe_args(batch=0)
    assert transe(**args)["score"].shape == (0,)


def test_half_precision_bundle_refuses_f32_tables(rt, program):
    """A bundle compiled for bf16 tables takes bf16 tables only: f32 ones
    (the reverse of the case above) are refused, the program stays usable."""
    half = program("transe_l2", "pos", "bf16.D128")
    args = transe_args()
    with pytest.raises(rt.ArgumentError, match="table 'Eemb' expects dtype bf16, got f32"):
        half(**args)
    args = {k: v.bfloat16() if v.is_floating_point() else v for k, v in args.items()}
    with pytest.raises(rt.ArgumentError, match="table 'Remb' expects dtype bf16, got f16"):
        half(**dict(args, Remb=args["Remb"].half()))
    assert_matches(half(**args)["score"], args)
    assert half(**transe_args(batch=0) | {"Eemb": args["Eemb"], "Remb": args["Remb"]}
                )["score"].shape == (0,)


def test_half_precision_values_beyond_range_follow_ieee(program):
    """f16 holds at most 65504: larger float32 values convert to inf, and
    the scores of the edges that read them are inf, the others exact."""
    half = program("transe_l2", "pos", "f16.D128")
    args = transe_args()
    args["Eemb"][args["h"][5], 7] = 1.0e6
    args = {k: v.half() if v.is_floating_point() else v for k, v in args.items()}
    assert torch.isinf(args["Eemb"]).sum() == 1
    score = half(**args)["score"].double()
    reference = REFERENCES["transe_l2"](**args)
    assert torch.isinf(reference).any() and torch.isfinite(reference).any()
    torch.testing.assert_close(score, reference, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_dependent_launches_wait_for_prior_kernels(program):
    """On sm_90 the fused kernel is launched while the previous kernel of the
    stream finishes and waits at its entry (griddepcontrol.wait) before it
    touches memory: it must see the tables a PyTorch kernel just rewrote
    (read after write) and must not overwrite `out` before a PyTorch kernel
    that reads it is done (write after read)."""
    transe = program("transe_l2", "pos", "D512")
    args = transe_args(rows=14951, length=512, batch=16384)
    out = torch.empty(16384, device="cuda")
    snapshots = []
    for _ in range(30):
        args["Eemb"].mul_(-1.0)
        transe(**args, out={"score": out})
        snapshots.append(out.clone())
    torch.cuda.synchronize()
    # After an even number of flips the table is the original one.
    for i, snapshot in enumerate(snapshots):
        assert_matches(snapshot, dict(args, Eemb=args["Eemb"] * (-1.0) ** (i + 1)))


def test_captured_call_replays_on_new_inputs(rt, transe):
    """A call captured in a CUDA graph replays on whatever its arrays hold:
    new indices written in place give their scores."""
    args = transe_args()
    captured = transe.capture(**args)
    assert isinstance(captured, rt.CapturedCall)
    score = captured.results["score"]
    torch.cuda.synchronize()
    assert_matches(score, args)
    generator = torch.Generator(device="cuda").manual_seed(9)
    for _ in range(3):
        for name in ("h", "t"):
            args[name].copy_(torch.randint(0, 100, (64,), device="cuda", generator=generator))
        score.fill_(float("nan"))
        captured.replay()
        torch.cuda.synchronize()
        assert_matches(score, args)
    stream = torch.cuda.Stream()
    score.fill_(float("nan"))
    captured.replay(stream=stream.cuda_stream)
    stream.synchronize()
    assert_matches(score, args)


def test_captured_matrix_model_with_its_sort(program):
    """The launch plan of a matrix model (memsets, the sort's kernels, the
    fused kernel with its scratch buffers) replays from the graph."""
    transr = program("transr", "pos", "D128")
    generator = torch.Generator(device="cuda").manual_seed(4)
    args = {"Eemb": torch.randn(500, 128, device="cuda", generator=generator),
            "Remb": torch.randn(20, 128, device="cuda", generator=generator),
            "Pm": torch.randn(20, 128, 128, device="cuda", generator=generator) / 12,
            "h": torch.randint(0, 500, (3000,), device="cuda", generator=generator),
            "r": torch.randint(0, 20, (3000,), device="cuda", generator=generator),
            "t": torch.randint(0, 500, (3000,), device="cuda", generator=generator)}
    captured = transr.capture(**args)
    for _ in range(2):
        args["r"].copy_(torch.randint(0, 20, (3000,), device="cuda", generator=generator))
        captured.replay()
        torch.cuda.synchronize()
        reference = REFERENCES["transr"](**args)
        got = captured.results["score"].double()
        assert ((got - reference).norm() / reference.norm()).item() < 1e-5
        assert torch.equal(captured.results["score"], transr(**args)["score"])


def test_capture_refuses_checked_mode_and_bad_arguments(rt, transe):
    args = transe_args()
    with pytest.raises(rt.ArgumentError, match="cannot be captured"):
        transe.capture(**args, checked=True)
    with pytest.raises(rt.ArgumentError, match="indices 'h' expects dtype i64, got i32"):
        transe.capture(**dict(args, h=args["h"].int()))
    assert_matches(transe(**args)["score"], args)


ORDER = ("Eemb", "Remb", "h", "r", "t")


def test_run_takes_arrays_in_signature_order(rt, transe):
    """run(*arrays) is the lean entry point: the arguments in signature
    order give the result; with the result appended it is written in place
    and returned."""
    assert [p["name"] for p in transe.signature["params"]] == [*ORDER, "score"]
    args = transe_args()
    score = transe.run(*(args[k] for k in ORDER))
    assert isinstance(score, torch.Tensor) and score.shape == (64,)
    assert_matches(score, args)
    out = torch.full((64,), float("nan"), device="cuda")
    assert transe.run(*(args[k] for k in ORDER), out) is out
    assert_matches(out, args)
    stream = torch.cuda.Stream()
    out.fill_(float("nan"))
    with torch.cuda.stream(stream):
        transe.run(*(args[k] for k in ORDER), out, stream=stream.cuda_stream)
    stream.synchronize()
    assert_matches(out, args)
    # stream=None is the default stream; batch_size must agree with the
    # index arrays, like a call's.
    assert_matches(transe.run(*(args[k] for k in ORDER), stream=None, batch_size=64), args)
    with pytest.raises(rt.ArgumentError, match="'B' is 65 \\(set by 'the requested batch size'\\)"):
        transe.run(*(args[k] for k in ORDER), batch_size=65)
    with pytest.raises(rt.ArgumentError, match="batch size must not be negative"):
        transe.run(*(args[k] for k in ORDER), batch_size=-1)


@pytest.mark.parametrize("arrays,message", [
    (lambda a: [a[k] for k in ORDER[:4]], r"in signature order \(Eemb, Remb, h, r, t\), optionally followed by its results \(score\); got 4"),
    (lambda a: [a[k] for k in ORDER] + [a["h"], a["h"]], "got 7 arrays"),
    (lambda a: [a["Eemb"], a["Remb"][:, :64].contiguous(), a["h"], a["r"], a["t"]],
     "table 'Remb' expects size 128 in dimension 1"),
    (lambda a: [a["Eemb"], a["Remb"], a["h"].int(), a["r"], a["t"]], "indices 'h' expects dtype i64"),
    (lambda a: [a[k] for k in ORDER] + [torch.empty(64, device="cuda", dtype=torch.float64)],
     "result 'score' expects dtype f32"),
    (lambda a: [a[k] for k in ORDER] + [torch.empty(65, device="cuda")], "result 'score' expects shape"),
    (lambda a: [a[k] for k in ORDER] + [torch.empty(64)], "result 'score' is in host memory"),
])
def test_run_refuses_bad_arrays_and_stays_usable(rt, transe, arrays, message):
    args = transe_args()
    with pytest.raises(rt.ArgumentError, match=message):
        transe.run(*arrays(args))
    assert_matches(transe.run(*(args[k] for k in ORDER)), args)


def test_launch_plans_are_kept_per_shape(rt, program):
    """A program keeps one launch plan per set of argument shapes: calls that
    alternate between batch sizes and table sizes reuse them and give each
    shape's scores (a plan is never applied to other shapes), and a new
    program of the same bundle shares them."""
    transe = rt.Program(bundle_text())
    before = transe.num_plans
    shapes = [(100, 64), (100, 1000), (300, 64), (100, 0), (100, 1000), (300, 64), (100, 64)]
    for rows, batch in shapes:
        args = transe_args(rows=rows, batch=batch)
        assert_matches(transe(**args)["score"], args)
        assert_matches(transe.run(*(args[k] for k in ORDER)), args)
    assert transe.num_plans - before <= 4
    assert rt.Program(bundle_text()).num_plans == transe.num_plans


def test_launch_plans_of_a_matrix_model_size_its_scratch(program):
    """TransR's plan sizes its scratch buffers (the sort's counters, the
    grouping) per batch: alternating batch sizes stay exact, and a batch
    larger than all before grows the stream's buffers."""
    transr = program("transr", "pos", "D128")
    generator = torch.Generator(device="cuda").manual_seed(5)
    tables = {"Eemb": torch.randn(500, 128, device="cuda", generator=generator),
              "Remb": torch.randn(20, 128, device="cuda", generator=generator),
              "Pm": torch.randn(20, 128, 128, device="cuda", generator=generator) / 12}
    for batch in (3000, 17, 3000, 9000, 17):
        args = dict(tables, **{k: torch.randint(0, n, (batch,), device="cuda", generator=generator)
                               for k, n in (("h", 500), ("r", 20), ("t", 500))})
        reference = REFERENCES["transr"](**args)
        got = transr(**args)["score"].double()
        assert ((got - reference).norm() / reference.norm().clamp_min(1e-30)).item() < 1e-5
        names = [p["name"] for p in transr.signature["params"] if p["role"] != "result"]
        assert torch.equal(transr.run(*(args[k] for k in names)), transr(**args)["score"])
