"""One finding, one name: the demo sweep's findings carry the same id in every output a person or a
scheduler reads (text report, JSON, drain list and Slurm reasons, gate, NPD, /metrics, history, TUI)."""

from __future__ import annotations

import json
import re

import pytest

from fabricdoc.cli.main import main
from fabricdoc.report.history import History
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exporter import FabricCollector
from fabricdoc.scheduler.gate import evaluate
from fabricdoc.scheduler.k8s import npd_status
from fabricdoc.scheduler.slurm import plan_drain
from fabricdoc.sweep import SweepConfig, run_sweep

TUI_INDEX = pytest.importorskip("fabricdoc.tui.index")
TUI_ROWS = pytest.importorskip("fabricdoc.tui.rows")
TUI_OVERVIEW = pytest.importorskip("fabricdoc.tui.overview_view")
TUI_IMPACT = pytest.importorskip("fabricdoc.tui.impact_view")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = tmp_path_factory.mktemp("identity") / "r.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    return path


def test_every_output_names_each_finding_by_the_same_id(demo, tmp_path, capsys):
    report = Report.load(demo)
    ids = [f.id for f in report.findings]
    blamed = [f.id for f in report.findings if f.severity != "info"]
    assert len(blamed) == 4 and len(set(ids)) == len(ids) and all(re.fullmatch(r"[0-9a-f]{6}", i) for i in ids)
    assert ids == [f["id"] for f in json.loads(demo.read_text())["findings"]]

    text = summary_text(report)
    rows = [ln.split()[0] for ln in text.splitlines() if ln.split() and ln.split()[0] in ids]
    assert rows == ids  # the findings table leads each row with the id

    flapping = next(f for f in report.findings if f.fault == "flapping")
    (entry,) = report.drain
    assert entry.tag == flapping.id and f"  {entry.node}: {flapping.id} " in text
    (action,) = plan_drain(report)[0]
    assert f"fd:flapping {flapping.id} " in action.reason

    res = evaluate(report, [entry.node])
    assert not res.ok and any(flapping.id in r for r in res.reasons)
    assert flapping.id in npd_status(report, entry.node)[1]

    collector = FabricCollector(demo)
    collector.refresh()
    exposed = collector.exposition().decode()
    assert all(f'id="{i}"' in exposed for i in ids)

    db = tmp_path / "h.sqlite"
    with History(db) as h:
        h.append(report)
        assert sorted(h.component_failures("warning")["id"]) == sorted(blamed)

    index = TUI_INDEX.ReportIndex(report)
    table = TUI_ROWS.finding_rows(index)
    assert [table.row(k).cells[0].plain for k in table.keys] == ids

    assert main(["history", "--history", str(db), "failures", "--part", "node0027"]) == 0
    shown = capsys.readouterr().out
    assert flapping.id in shown and all(i not in shown for i in ids if i != flapping.id)


def test_the_summary_the_tui_impact_and_metrics_give_the_same_figures_with_the_same_labels(demo, capsys):
    from fabricdoc.report.figures import busbw_figures, remedy_text, throughput_text

    report = Report.load(demo)
    imp = report.impact
    rec = imp.recommendation
    figures = busbw_figures(imp.allreduce_busbw_gbps, len(report.drain))
    assert [f.label for f in figures] == ["nominal", "now", "after drain (1 host)", "recommended"]
    shown = [f"{f.label} {f.gbps:.1f}" for f in figures]
    job = throughput_text(rec.throughput_fraction)
    assert "96.9% of nominal (hosts kept x busbw" in job

    text = summary_text(report)
    assert all(s in text for s in shown) and job in text

    overview = TUI_OVERVIEW.overview_text(TUI_INDEX.ReportIndex(report)).plain
    assert all(f"{f.label} {f.gbps:,.1f} Gb/s" in overview for f in figures)
    tui = TUI_IMPACT.impact_text(report, None).plain
    assert all(f.label in tui for f in figures) and job in tui
    assert "recommended remedy: " + remedy_text(rec) in tui
    assert "out of service leaf02[5] -- spine01[2], leaf03[6] -- spine02[3], leaf06[8] -- spine04[6]" in tui
    alternatives = [w for w in imp.what_if if w.choice == "alternative"]
    assert alternatives and all(f"alternative: {remedy_text(w)} →" in tui for w in alternatives[:3])
    assert len({remedy_text(w) for w in alternatives}) == len(alternatives)

    collector = FabricCollector(demo)
    collector.refresh()
    exposed = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1]) for ln in collector.exposition().decode().splitlines()
               if ln.startswith("fabricdoc_allreduce_busbw_bytes_per_second{")}
    assert exposed == {f'fabricdoc_allreduce_busbw_bytes_per_second{{basis="{f.key}"}}': pytest.approx(f.gbps * 1e9 / 8)
                       for f in figures}

    assert main(["impact", str(demo)]) == 1  # the report has faults
    out = capsys.readouterr().out
    assert "after drain (1 host)" in out and "recommended" in out and f"{rec.throughput_fraction:.1%}" in out
