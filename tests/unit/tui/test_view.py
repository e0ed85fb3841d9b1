"""The view index, rows and texts, without Textual: what the screens will show for a report."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from fabricdoc.tui.evidence_view import evidence_text, finding_text
from fabricdoc.tui.formatting import safe
from fabricdoc.tui.impact_view import impact_text
from fabricdoc.tui.index import ReportIndex, link_id
from fabricdoc.tui.overview_view import overview_text
from fabricdoc.tui.rows import finding_rows, host_rows, link_rows, whatif_rows
from fabricdoc.tui.series import BANDWIDTH_SERIES, history_series, store_series
from rich.text import Text

from fabricdoc.model.evidence import (
    CorruptionEvidence,
    PairSample,
    SlowPairsEvidence,
    SwitchLinksEvidence,
)
from fabricdoc.model.severity import Severity
from tests.helpers.tui import (
    CLICK_LABEL,
    ESCAPE_LABEL,
    ESCAPE_SHOWN,
    MARKUP_LABEL,
    finding_id,
    make_report,
    words,
    write_history,
)


@pytest.fixture(scope="module")
def index(report):
    return ReportIndex(report)


def _styles_of(text: Text, phrase: str) -> set[str]:
    """The styles of the spans covering the last ``phrase`` in ``text``."""
    start = text.plain.rindex(phrase)
    return {str(s.style) for s in text.spans if s.start <= start < s.end}


def test_importing_the_view_does_not_load_textual():
    modules = ("index", "formatting", "actions", "rows", "evidence_view", "detail_view", "overview_view",
               "impact_view", "series")
    code = f"import sys; import {', '.join(f'fabricdoc.tui.{m}' for m in modules)}; print('textual' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_importing_the_app_does_load_textual():
    # The check above can fail: the app's screens pull textual in.
    code = "import sys, fabricdoc.tui.app; print('textual' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_safe_escapes_control_characters_and_never_parses_markup():
    assert safe(ESCAPE_LABEL).plain == ESCAPE_SHOWN
    assert "\x1b" not in safe(ESCAPE_LABEL).plain and "\u202e" not in safe(ESCAPE_LABEL).plain
    assert safe("a\nb").plain == "a\\x0ab"  # one row stays one row
    for label in (MARKUP_LABEL, CLICK_LABEL):
        text = safe(label, "bold")
        assert text.plain == label and [str(s.style) for s in text.spans] == [] and str(text.style) == "bold"


def test_hostile_labels_reach_the_rows_escaped_and_literal(index):
    hosts = {r.key: r for r in host_rows(index)}
    assert hosts["node0003"].cells[0].plain.endswith(MARKUP_LABEL)
    assert hosts["node0006"].cells[0].plain.endswith(CLICK_LABEL)
    assert hosts["node0010"].cells[0].plain.endswith(ESCAPE_SHOWN)
    cells = [c.plain for r in link_rows(index) for c in r.cells]
    assert not any("\x1b" in c for c in cells)
    assert f"{ESCAPE_SHOWN}[1]" in cells


def test_findings_are_listed_worst_first_and_sort_by_the_severity_type(report, index):
    rows = finding_rows(index)
    assert [r.key for r in rows] == [f.id for f in report.findings]
    ranks = [r.sort["severity"][0] for r in rows]
    assert ranks == sorted(ranks, reverse=True)
    assert ranks[0] == Severity.ERROR.rank and ranks[-1] == Severity.WARNING.rank


def test_a_host_collects_its_nic_and_gpu_findings_and_its_cable(report, index):
    nic, gpu = finding_id(report, "degraded_bandwidth"), finding_id(report, "gpu_error")
    # The GPU finding names the host by its host name; the index finds the node.
    assert {f.id for f in index.findings_of_node("node0003")} == {nic, gpu}
    assert index.node_health("node0003") == Severity.ERROR
    down = finding_id(report, "down")
    assert [f.id for f in index.findings_of_node("node0006")] == [down]
    assert index.is_drained("node0006") and index.drained_hosts() == {"node0006"}
    assert index.node_health("node0001") is None


def test_a_slow_pair_belongs_to_its_two_hosts_and_names_no_cable(report):
    from fabricdoc.model.findings import Finding

    pair = Finding("", "pair", "node0001[1] -> node0002[1]", "slow_unexplained", "info", 0.0, [],
                   [("node0001", 1), ("node0002", 1)], ["node0001", "node0002"])
    index = ReportIndex(dataclasses.replace(report, findings=[*report.findings, pair]))
    fid = index.findings_of_node("node0001")[-1].id
    assert index.findings[fid].kind == "pair" and fid in {f.id for f in index.findings_of_node("node0002")}
    # Two hosts' ports are not a cable: no link row, nothing to take out of service in the what-if.
    assert link_id(("node0001", 1), ("node0002", 1)) not in index.link_findings
    assert link_id(("node0001", 1), ("node0002", 1)) not in index.unhealthy_links()


def test_hosts_and_links_sort_worst_first(index):
    hosts = sorted(host_rows(index), key=lambda r: r.sort["health"])
    assert {hosts[0].key, hosts[1].key} == {"node0003", "node0006"}
    assert hosts[-1].cells[3].plain == "ok"
    links = sorted(link_rows(index), key=lambda r: r.sort["health"])
    assert len(links) == 24
    # three link findings, then the slow NIC's cable
    assert [r.cells[4].plain for r in links[:5]] == ["error", "error", "error", "warning", "ok"]
    down = link_id(("leaf02", 2), ("node0006", 1))
    assert index.link_health(down) == Severity.ERROR and index.links[down]["state"] == "down"


def test_whatif_rows_mark_the_report_drain_list_first(index):
    rows = sorted(whatif_rows(index, index.drained_hosts()), key=lambda r: r.sort["health"])
    assert rows[0].key == "node0006" and rows[0].cells[0].plain == "[x] drain"
    assert all(r.cells[0].plain == "[ ]" for r in rows[1:])


def test_evidence_shows_counters_states_flaps_slow_tests_and_gpu_problems(report, index):
    def text(fault):
        return words(finding_text(index, index.findings[finding_id(report, fault)]).plain)

    lossy = text("symbol_errors")
    assert "SymbolErrorCounter +10 in 10s (1/s) at leaf01[5]" in lossy
    assert "ends leaf01[5] ↔ spine01[1]" in lossy
    lossy_finding = index.findings[finding_id(report, "symbol_errors")]
    assert f"key {lossy_finding.key}" in lossy and lossy_finding.key.endswith(":symbol_errors")
    down = text("down")
    assert f"port Down/Polling at {CLICK_LABEL}[1] (iblinkinfo)" in down
    flapping = text("flapping")
    assert "3 link-down events" in flapping and "first 2025-10-09 08:53:21.429Z last 2025-10-09 08:53:27.143Z" in flapping
    assert "2/4 tests through it slow" in flapping and "node0009[1] → node0014[1] slow 256.2 Gb/s of 368.0 Gb/s ratio 0.70" in flapping
    gpu = text("gpu_error")
    assert "GPU-5f0c3a52" in gpu and "xid 79" in gpu and "row remap pending" in gpu


def test_more_evidence_kinds_read_by_their_fields(index):
    evidence = [
        CorruptionEvidence(2, (("node0001", "node0002", 17), ("node0002", "node0004", 3))),
        SwitchLinksEvidence(links_bad=4, links_total=6, links_down=1),
        SlowPairsEvidence(tests=2, slow=2, worst_ratio=0.5, median_ratio=0.5, equivalent_suspects=2,
                          alternatives=((("leaf01", 5), ("spine01", 1)),)),
    ]
    text = words(evidence_text(index, evidence).plain)
    assert "data check failed in 2 tests" in text and "node0001 ↔ node0002 17 wrong elements" in text
    assert "4 of 6 links bad (1 down)" in text
    assert "2 equally likely suspects" in text and "or leaf01[5] — spine01[1]" in text
    assert words(evidence_text(index, []).plain) == "no evidence recorded"


@pytest.mark.parametrize(("suspect_only", "style"), [(False, "red"), (True, "yellow")])
def test_slow_tests_are_red_and_a_suspects_low_tests_yellow_with_what_healthy_tests_reach(suspect_only, style):
    index = ReportIndex(make_report())
    sample = PairSample(("node0001", 1), ("node0002", 1), "ok", 276.0, 368.0, 0.75, 0.81)
    ev = SlowPairsEvidence(tests=1, slow=1, worst_ratio=0.75, median_ratio=0.75, slow_pairs=(sample,),
                           median_relative=0.81, healthy_efficiency=0.92, suspect_only=suspect_only)
    text = evidence_text(index, [ev])
    assert _styles_of(text, "ratio 0.75") == {style} and _styles_of(text, "0.81 of healthy") == {style}
    assert "81% of what healthy tests reach (92% of the line rate)" in text.plain
    assert ("a suspect to re-test" in text.plain) == suspect_only


def test_bandwidth_history_is_the_hosts_tests_by_round(index):
    # node0003 ran one test in each of three rounds; a switch has no tests.
    assert history_series(index, "node0003") == {BANDWIDTH_SERIES: [276.0, 275.2, 277.7]}
    assert history_series(index, "node0003", port=2) == {}
    assert history_series(index, "leaf01") == {}


def test_evidence_values_never_become_a_series(report):
    # Only the report's pairs and the history store make series: no evidence field does.
    f = report.findings[0]
    crafted = dataclasses.replace(report, findings=[dataclasses.replace(f, node_ids=["node0001"])], pairs=[])
    assert history_series(ReportIndex(crafted), "node0001") == {}


def test_store_series_reads_counter_rates_of_past_sweeps(report, index, tmp_path):
    store = tmp_path / "history.sqlite"
    write_history(report, store, [0, 6, 18, 48])
    series, note = store_series(store, index, "leaf01", 5)
    assert note is None
    # The counter the finding names comes first, then the port's bandwidth.
    assert list(series)[:2] == ["leaf01[5] symbol_errors (per second, 3 intervals)",
                                "leaf01[5] rcv_bytes as Gb/s (3 intervals)"]
    assert series["leaf01[5] symbol_errors (per second, 3 intervals)"] == [0.1, 0.2, 0.5]
    assert series["leaf01[5] xmit_bytes as Gb/s (3 intervals)"] == pytest.approx([4000 * 8 / 1e9] * 3)
    assert series["leaf01[5] xmit_bytes as Gb/s (3 intervals)"].unit == "Gb/s"
    assert not any("rcv_errors" in name for name in series)  # flat at zero: left out
    peer, _ = store_series(store, index, "spine01", 1)
    assert not any("symbol_errors" in name for name in peer)  # its register never moved


def test_store_series_of_a_missing_or_broken_store(index, tmp_path):
    missing = tmp_path / "none" / "history.sqlite"
    assert store_series(missing, index, "leaf01") == ({}, None)
    assert not missing.parent.exists()
    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    series, note = store_series(broken, index, "leaf01")
    assert series == {} and note is not None and str(broken) in note


def test_overview_counts_findings_links_and_drains(report, index):
    text = words(overview_text(index).plain)
    assert "verdict FAIL" in text
    assert "link 0 3 0 0" in text and "gpu 0 1 0 0" in text and "nic 0 0 1 0" in text
    assert "links with findings 4 of 24" in text  # three link findings, and the NIC's cable
    assert "hosts to drain 1" in text
    assert f"pairs {len(report.pairs)} tested" in text


def test_impact_text_without_a_section_or_model_says_so(report):
    assert "the report carries no impact section" in impact_text(report, None).plain


def test_impact_below_the_slow_ratio_of_nominal_is_red():
    report = make_report(slow_ratio=0.8)
    live = {"nominal": 400.0, "now": 300.0, "after_drain": 392.0}
    text = impact_text(report, live)
    assert _styles_of(text, " 75.0% of nominal") == {"red"}
    assert _styles_of(text, " 98.0% of nominal") == {"green"}
    lenient = impact_text(make_report(slow_ratio=0.7), live)
    assert _styles_of(lenient, " 75.0% of nominal") == {"yellow"}
