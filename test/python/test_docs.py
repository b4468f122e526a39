"""The generated reference in docs/ matches the ODS files of the build."""

import pathlib

import pytest

from conftest import BUILD_ROOT, SOURCE_ROOT


def generated_docs():
    root = BUILD_ROOT / "docs"
    return sorted(p for p in root.glob("*/*.md") if len(p.read_text().splitlines()) > 1)


def test_docs_are_generated():
    assert generated_docs(), "the build has not generated docs (cmake --build build --target kge-doc)"


@pytest.mark.parametrize("path", generated_docs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_docs_are_current(path: pathlib.Path):
    committed = SOURCE_ROOT / "docs" / path.parent.name / path.name
    assert committed.exists(), f"{committed} is missing; run scripts/update-docs.sh"
    assert committed.read_text() == path.read_text(), (
        f"{committed} is stale; run scripts/update-docs.sh")
