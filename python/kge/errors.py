"""Exceptions of the kge package."""


class CompilerUnavailableError(ImportError):
    """The compiler extension (kge._compiler) is not built or not importable;
    the runtime parts of kge work without it (e.g. on a GPU machine without
    MLIR, running bundles compiled elsewhere)."""


class TraceError(Exception):
    """A score function cannot be traced: unsupported Python on traced
    values, or operands the dialect rejects. `filename` and `lineno` point
    at the user's line."""

    def __init__(self, message, filename=None, lineno=None, source=None):
        self.filename, self.lineno, self.source = filename, lineno, source
        where = f"{filename}:{lineno}: " if filename else ""
        text = f"{where}{message}"
        if source:
            text += f"\n    {lineno} | {source.strip()}"
        super().__init__(text)


def _mlir_error_class():
    try:
        from ._compiler import MLIRError as error
    except ImportError:
        class error(RuntimeError):  # noqa: N801 - stands in for the compiler's class
            """MLIR diagnostics (the compiler extension is not available)."""
    return error


#: Raised with MLIR's diagnostics (``.diagnostics``: one string each).
MLIRError = _mlir_error_class()
