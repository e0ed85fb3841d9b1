"""Fixtures of the TUI tests, and a runner for ``async def`` tests (no asyncio plugin is installed)."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tui_helpers import make_report  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop, as App.run_test() needs."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        asyncio.run(pyfuncitem.obj(**args))
        return True
    return None


@pytest.fixture(scope="session")
def report():
    return make_report()


@pytest.fixture
def report_file(tmp_path, report):
    path = tmp_path / "report.json"
    report.save(path)
    return path
