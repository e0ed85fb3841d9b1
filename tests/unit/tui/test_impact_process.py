"""The impact model's own process: built from the report file's path, answering routes too."""

from __future__ import annotations

import dataclasses
import threading

import fabricdoc.tui.app as app_module
import pytest
from fabricdoc.tui.app import FabricdocApp, default_impact_factory
from fabricdoc.tui.impact_process import ModelProcess

from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.model.records import PortRef
from fabricdoc.report.report import Report
from tests.helpers.tui import async_test, settle, wait_main


def test_the_process_reads_the_report_file_itself_and_routes_as_the_fabric_does(report, report_path):
    model = ModelProcess(report, report_path)
    try:
        here = ImpactModel(report.fabric_model(), report.findings)
        assert model.job_hosts == sorted(here.job_hosts)
        assert model.busbw(None, "ring", "now") == pytest.approx(here.busbw(None, "ring", "now"))
        path = here.fabric.path(PortRef("node0001", 1), PortRef("node0016", 1))
        assert model.route(("node0001", 1), ("node0016", 1)) == [((k.a.node, k.a.port), (k.b.node, k.b.port)) for k in path]
    finally:
        model.close()


def test_a_report_file_that_changed_since_it_was_opened_is_refused(report, tmp_path):
    path = tmp_path / "r.json"
    dataclasses.replace(report, run_id="another-run").save(path)
    model = ModelProcess(report, path)
    try:
        with pytest.raises(RuntimeError, match="changed since the TUI opened it"):
            model.job_hosts  # noqa: B018  (waits for the child's answer)
    finally:
        model.close()


def test_closing_while_the_model_builds_ends_the_child_and_frees_a_waiting_caller(report, report_path):
    model = ModelProcess(report, report_path)  # returns at once: the child is still importing
    outcome: list[object] = []
    waiter = threading.Thread(target=lambda: outcome.append(_try(lambda: model.job_hosts)), daemon=True)
    waiter.start()
    model.close()
    waiter.join(timeout=10)
    assert not waiter.is_alive() and not model._process.is_alive()
    assert len(outcome) == 1


def _try(fn):
    try:
        return fn()
    except RuntimeError as exc:
        return exc


@async_test
async def test_an_app_opened_from_a_file_gives_the_model_that_path(report_path):
    app = FabricdocApp(report_path, impact_factory=default_impact_factory)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_main(pilot)
        factory = screen.context.impact_factory
        assert factory.func is default_impact_factory and factory.keywords["path"] == report_path
        impact = screen.tab("impact")
        await settle(pilot, lambda: impact.model_state == "ready", "the impact model", 60)


@async_test
async def test_the_model_process_starts_with_the_files_load_and_serves_the_run_the_app_read(report_path, monkeypatch):
    events: list[str] = []
    started: list[ModelProcess] = []
    real_load, real_start = Report.load, ModelProcess.from_file

    def load(path, **kw):
        events.append("app reads the file")
        return real_load(path, **kw)

    def from_file(path):
        events.append("model process starts")
        started.append(real_start(path))
        return started[-1]

    monkeypatch.setattr(app_module.Report, "load", staticmethod(load))
    monkeypatch.setattr(ModelProcess, "from_file", staticmethod(from_file))
    app = FabricdocApp(report_path)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_main(pilot)
        impact = screen.tab("impact")
        await settle(pilot, lambda: impact.model_state == "ready", "the impact model", 60)
        assert events == ["model process starts", "app reads the file"]  # both read it at once
        assert impact.model is started[0] and impact.model.job_hosts == sorted(app.index.host_name.values())
    assert not started[0]._process.is_alive()  # ended with the app


@async_test
async def test_a_report_that_will_not_load_ends_the_model_process_started_for_it(tmp_path, monkeypatch):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "fabricdoc/v1", "findings": [')
    started: list[ModelProcess] = []
    real_start = ModelProcess.from_file

    def from_file(path):
        started.append(real_start(path))
        return started[-1]

    monkeypatch.setattr(ModelProcess, "from_file", staticmethod(from_file))
    app = FabricdocApp(bad)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot, lambda: app.error is not None, "the load error", 30)
    assert app.error and "bad.json" in app.error
    assert len(started) == 1 and not started[0]._process.is_alive()
