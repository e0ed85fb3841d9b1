"""Fixtures of the TUI tests (the code they use lives in tests/helpers/tui.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fabricdoc.report.report import Report
from tests.helpers.tui import GENERATED_AT, make_report

HandedSweep = Callable[[list[str]], tuple[Callable[..., Report], str | None]]


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
def sweep_handed_to_the_app() -> HandedSweep:
    """``handed(SWEEP_ARGS)``: what ``fabricdoc tui --sweep SWEEP_ARGS`` hands the app,
    ``(sweep function, export path)``, through the CLI's own path.

    A recorder stands in for the app (a test has no terminal to run it in).
    """
    from fabricdoc.tui import app as tui_app

    from fabricdoc.cli.main import main

    def handed(sweep_args: list[str]) -> tuple[Callable[..., Report], str | None]:
        got: dict[str, Any] = {}

        class RecordingApp:
            error = None
            return_code = 0

            def __init__(self, report, *, sweep, export_path, **_kw) -> None:
                got.update(report=report, sweep=sweep, export_path=export_path)

            def run(self) -> None:
                pass

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tui_app, "FabricdocApp", RecordingApp)
            assert main(["tui", "--sweep", *sweep_args]) == 0
        assert got["report"] is None
        return got["sweep"], got["export_path"]

    return handed


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory, sweep_handed_to_the_app: HandedSweep) -> Report:
    """The bundled demo's sweep (simulated, seed 0), as `fabricdoc tui --sweep --fabric demo` runs it:
    a half-width, a slow and an erroring spine link, and a flapping host cable; its time fixed."""
    out = tmp_path_factory.mktemp("demo") / "r.json"
    sweep, _ = sweep_handed_to_the_app(["--fabric", "demo", "-o", str(out)])
    report = sweep(lambda stage, done, total: None)
    report.generated_at = GENERATED_AT
    return report
