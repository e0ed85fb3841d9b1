"""`fabricdoc summary`: a report, or some of its findings, as a short Markdown or plain-text ticket."""

from __future__ import annotations

import pytest

from fabricdoc.cli.main import main
from fabricdoc.model.findings import Action, Finding
from fabricdoc.report.figures import busbw_figures, throughput_text
from fabricdoc.report.render import action_line, evidence_line
from fabricdoc.report.report import Report
from fabricdoc.report.ticket import ticket
from fabricdoc.sweep import SweepConfig, run_sweep
from tests.helpers.evidence import symbol_errors
from tests.helpers.reports import make_report


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = tmp_path_factory.mktemp("ticket") / "r.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    return path


def test_the_whole_report_has_every_finding_its_evidence_action_figures_and_drains(demo, capsys):
    report = Report.load(demo)
    assert main(["summary", str(demo), "--text"]) == 1  # the verdict's code, as impact gives
    text = capsys.readouterr().out
    assert text.startswith(f"fabricdoc: demo — FAIL ({len(report.findings)} findings)")
    for f in report.findings:
        assert f"\n{f.id} {f.severity} {f.kind} {f.fault}: {f.name}" in text
        assert all(evidence_line(ev) in text for ev in f.evidence) and action_line(f.action) in text
    assert throughput_text(report.impact.recommendation.throughput_fraction) in text
    figures = busbw_figures(report.impact.allreduce_busbw_gbps, len(report.drain))
    assert " / ".join(f"{f.label} {f.gbps:.1f}" for f in figures) in text
    (d,) = report.drain
    assert f"- {d.node}: {d.tag} " in text


def test_one_finding_by_a_leading_part_of_its_id_and_a_wrong_id_is_one_line(demo, capsys):
    report = Report.load(demo)
    one = report.findings[2]
    assert main(["summary", str(demo), "--finding", one.id[:3]]) == 1
    out = capsys.readouterr().out
    assert f"### {one.id} " in out and sum(f"### {f.id} " in out for f in report.findings) == 1
    assert f"findings shown: 1 of {len(report.findings)}" in out
    assert main(["summary", str(demo), "--finding", "zzzz"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "--finding zzzz: no finding" in err


def test_a_hostile_name_neither_moves_the_cursor_nor_forms_a_markdown_link():
    evil = "leaf01\x1b]0;owned\x07 [click](http://evil.example) <img src=x> |col|"
    f = Finding("", "link", f"{evil}[3] -- spine01[1]", "symbol_errors", "error", 0.9,
                [symbol_errors("leaf01", 3, 57)], [("leaf01", 3), ("spine01", 1)], ["leaf01", "spine01"],
                action=Action("swap the optic", "network", "now", "errors"))
    md = ticket(make_report(findings=[f]), fmt="markdown")
    assert "\x1b" not in md and "\x07" not in md and "\\x1b" in md
    assert "[click](" not in md and "\\[click\\](http://evil.example)" in md
    assert "\\<img src=x\\>" in md and "<img" not in md.replace("\\<img", "") and "\\|col\\|" in md
    text = ticket(make_report(findings=[f]), fmt="text")
    assert "\x1b" not in text and "[click](http://evil.example)" in text  # plain text needs no Markdown escapes
