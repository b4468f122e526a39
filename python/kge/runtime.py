"""Running kernel bundles on a GPU: KGE's runtime (runtime/, no MLIR) as
the `kge_runtime` module, with PyTorch/CuPy tensors through DLPack or
``__cuda_array_interface__``.

    program = kge.runtime.Program(bundle_text)
    scores = program(Eemb=E, Remb=R, h=h, r=r, t=t)["score"]

The lean entry point takes the arrays in signature order (the arguments,
then optionally the results, written in place) and returns the result:

    scores = program.run(E, R, h, r, t)
    program.run(E, R, h, r, t, scores)      # into `scores`

A call can be captured in a CUDA graph and replayed with one graph launch
(a few microseconds of host time): write the next indices into the same
tensors, read the scores from the same result tensor.

    captured = program.capture(Eemb=E, Remb=R, h=h, r=r, t=t)
    h.copy_(next_h); r.copy_(next_r); t.copy_(next_t)
    captured.replay()
    scores = captured.results["score"]

The row-sparse optimizer's kernels (kge.training.RowSparseOptimizer) are
here too: `rows_add` sums gathered rows' gradients into a buffer,
`adagrad_rows` and `adam_rows` update the rows they reached, each in one
kernel launched on a stream without waiting.

Import errors say how to build the module; the compiler is not needed.
"""

try:
    from kge_runtime import (ArgumentError, BundleError, CapturedCall, CudaError,
                             DeviceBuffer, Error, IndexRangeError, Program, adagrad_rows,
                             adam_rows, rows_add, validate_bundle)
except ImportError as error:  # pragma: no cover - depends on the machine
    raise ImportError(
        "the KGE runtime module (kge_runtime) is not available: build runtime/ with "
        "cmake (it needs a C++ compiler, nlohmann-json and pybind11) and put its "
        f"python_packages directory on PYTHONPATH ({error})") from error

__all__ = ["ArgumentError", "BundleError", "CapturedCall", "CudaError", "DeviceBuffer",
           "Error", "IndexRangeError", "Program", "adagrad_rows", "adam_rows", "rows_add",
           "validate_bundle"]
