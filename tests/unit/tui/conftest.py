"""Fixtures of the TUI tests (the code they use lives in tests/helpers/tui.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricdoc.report.report import Report
from tests.helpers.tui import make_report


@pytest.fixture(scope="session")
def report() -> Report:
    """The fixed leaf/spine report with hostile labels (:func:`tests.helpers.tui.make_report`)."""
    return make_report()


@pytest.fixture
def report_path(tmp_path: Path, report: Report) -> Path:
    """That report saved as a file."""
    path = tmp_path / "report.json"
    report.save(path)
    return path
