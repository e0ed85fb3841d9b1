"""Fixtures of the TUI tests (the code they use lives in tests/helpers/tui.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricdoc.report.report import Report
from tests.helpers.tui import GENERATED_AT, make_report


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


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The bundled demo's sweep (simulated, seed 0), as `fabricdoc sweep --fabric demo` writes it:
    a half-width, a slow and an erroring spine link, and a flapping host cable; its time fixed."""
    from fabricdoc.cli.tui import _sweep_fn

    out = tmp_path_factory.mktemp("demo") / "r.json"
    sweep, _ = _sweep_fn(["--fabric", "demo", "-o", str(out)])
    report = sweep(lambda stage, done, total: None)
    report.generated_at = GENERATED_AT
    return report
