"""The impact section and the pair rows are frozen records: saved as the same JSON they were read from,
loaded back equal, and read by attribute by every output (text, ticket, gate, /metrics, compare, TUI)."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from rich.console import Console

from fabricdoc.cli.impact import print_section
from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.impact.records import BUSBW_KEYS, AlgorithmFigures, Bottleneck, ImpactSection, Remedy
from fabricdoc.impact.section import impact_section
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations
from fabricdoc.report.compare import compare_reports
from fabricdoc.report.figures import busbw_figures
from fabricdoc.report.pairs import PairRow
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.report.ticket import ticket
from fabricdoc.scheduler.exporter import FabricCollector
from fabricdoc.scheduler.gate import busbw_loss_pct
from fabricdoc.sweep import SweepConfig, run_sweep

TUI_INDEX = pytest.importorskip("fabricdoc.tui.index")
TUI_OVERVIEW = pytest.importorskip("fabricdoc.tui.overview_view")
TUI_IMPACT = pytest.importorskip("fabricdoc.tui.impact_view")
TUI_SERIES = pytest.importorskip("fabricdoc.tui.series")


@pytest.fixture(scope="module")
def swept():
    return run_sweep(SweepConfig(fabric="demo"))


@pytest.fixture(scope="module")
def demo(swept, tmp_path_factory):
    return swept.save(tmp_path_factory.mktemp("typed") / "report.json")


def _old_impact(impact: dict) -> dict:
    """The impact object as reports written before remedies and calibration had it."""
    old = {k: v for k, v in impact.items()
           if k not in ("routing_engine", "recommendation", "expected_busbw", "uncosted_findings")}
    old["allreduce_busbw_gbps"] = {k: v for k, v in impact["allreduce_busbw_gbps"].items() if k != "recommended"}
    old["by_algorithm"] = {
        alg: {k: ({kk: vv for kk, vv in v.items() if kk != "measured"} if k == "bottleneck_now" and v else v)
              for k, v in fig.items() if k != "recommended"}
        for alg, fig in impact["by_algorithm"].items()}
    old["what_if"] = [{k: v for k, v in w.items() if k != "isolate"} for w in impact["what_if"]]
    return old


def test_a_sweep_report_is_records_and_loads_back_equal_and_byte_for_byte(swept, demo):
    assert isinstance(swept.impact, ImpactSection) and all(isinstance(p, PairRow) for p in swept.pairs)
    loaded = Report.load(demo)
    assert loaded.impact == swept.impact and loaded.pairs == swept.pairs
    assert loaded.to_json() + "\n" == demo.read_text()
    again = Report.from_dict(json.loads(loaded.to_json()))
    assert again.to_json() == loaded.to_json()
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.impact.rails = 2  # type: ignore[misc]


def test_a_section_with_a_given_what_if_and_sharp_written_by_impact_round_trips(demo, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(demo.read_text())
    args = ["impact", str(path), "--sharp", "--isolate", "leaf02[5]", "--drain", "node0003", "--efficiency", "0.8"]
    assert main([*args, "--write", "--json"]) == 1
    printed = json.loads(capsys.readouterr().out)
    loaded = Report.load(path)
    assert loaded.impact.what_if[0].choice == "given" and loaded.impact.what_if[0].isolate == (
        (("leaf02", 5), ("spine01", 2)),)
    assert "sharp" in loaded.impact.expected_busbw.by_algorithm
    assert loaded.impact.as_dict() == printed
    assert loaded.to_json() + "\n" == path.read_text()


def test_a_skipped_tree_and_a_host_without_a_route_round_trip_as_the_section_wrote_them(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    down = Finding("F001", "link", "x", "down", "error", 0.9, [], [("node0002", 1), ("leaf01", 2)],
                   ["node0002", "leaf01"])
    report = Report.build(fabric, [down], Observations())
    report.impact = impact_section(fabric, [down], drain_hosts=["node0002"], tree_max_hosts=3)
    ring, tree = report.impact.by_algorithm["ring"], report.impact.by_algorithm["tree"]
    assert tree == AlgorithmFigures(skipped=tree.skipped) and ring.bottleneck_now.link is None
    data = report.to_dict()["impact"]
    assert data["by_algorithm"]["tree"] == {"skipped": tree.skipped}
    assert set(data["by_algorithm"]["ring"]["bottleneck_now"]) == {"link", "direction", "capacity_gbps", "flows", "reason"}
    path = report.save(tmp_path / "r.json")
    loaded = Report.load(path)
    assert loaded.impact == report.impact and loaded.to_json() + "\n" == path.read_text()


def test_an_older_report_without_remedies_or_calibration_loads_reads_and_writes_back_the_same(demo, tmp_path):
    data = json.loads(demo.read_text())
    data["impact"] = _old_impact(data["impact"])
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    old = Report.load(path)
    assert old.impact.recommendation is None and old.impact.expected_busbw is None
    assert all(w.isolate is None for w in old.impact.what_if)
    assert old.impact.headline.bottleneck_now.measured is None
    assert old.to_json() + "\n" == path.read_text()
    assert [f.key for f in busbw_figures(old.impact.allreduce_busbw_gbps, len(old.drain))] == [
        "nominal", "now", "after_drain"]
    text = summary_text(old)
    assert "AllReduce busbw (Gb/s): nominal 400.0" in text and "recommended:" not in text
    assert "recommended remedy" not in TUI_IMPACT.impact_text(old, None).plain
    assert "busbw" in ticket(old, fmt="text")


def test_every_reader_reads_a_loaded_report_as_the_report_it_was_saved_from(swept, demo):
    loaded = Report.load(demo)
    assert summary_text(loaded) == summary_text(swept)
    assert ticket(loaded) == ticket(swept)
    assert TUI_IMPACT.impact_text(loaded, None).plain == TUI_IMPACT.impact_text(swept, None).plain
    assert (TUI_OVERVIEW.overview_text(TUI_INDEX.ReportIndex(loaded)).plain
            == TUI_OVERVIEW.overview_text(TUI_INDEX.ReportIndex(swept)).plain)
    index = TUI_INDEX.ReportIndex(loaded)
    host = next(nid for nid, n in index.nodes.items() if n.get("kind") == "host")
    assert TUI_SERIES.history_series(index, host) == TUI_SERIES.history_series(TUI_INDEX.ReportIndex(swept), host)
    bw = loaded.impact.allreduce_busbw_gbps
    assert busbw_loss_pct(loaded.impact) == pytest.approx((bw.nominal - bw.now) / bw.nominal * 100)
    assert busbw_loss_pct(loaded.impact, "after_drain") == busbw_loss_pct(swept.impact, "after_drain")
    assert all(d.delta == 0 for d in compare_reports(swept, loaded).busbw_gbps)
    collector = FabricCollector(demo)
    collector.refresh()
    exposed = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1]) for ln in collector.exposition().decode().splitlines()
               if ln.startswith("fabricdoc_allreduce_busbw_bytes_per_second{")}
    assert exposed == {f'fabricdoc_allreduce_busbw_bytes_per_second{{basis="{k}"}}': pytest.approx(bw.figure(k) * 1e9 / 8)
                       for k in BUSBW_KEYS}

    def printed(section: ImpactSection) -> str:
        out = io.StringIO()
        print_section(section, Console(file=out, width=120))
        return out.getvalue()

    assert printed(loaded.impact) == printed(swept.impact)


def test_a_remedy_reads_its_cables_as_tuples_and_writes_them_as_lists():
    row = Remedy.from_dict({"choice": "given", "drain": ["h1"], "isolate": [[["leaf01", 1], ["spine01", 2]]],
                            "hosts": 3, "busbw_gbps": 100.0, "vs_nominal": 0.25, "throughput_fraction": 0.2})
    assert row.isolate == ((("leaf01", 1), ("spine01", 2)),) and row.drain == ("h1",)
    assert row.as_dict() == {"choice": "given", "drain": ["h1"], "isolate": [[["leaf01", 1], ["spine01", 2]]],
                             "hosts": 3, "busbw_gbps": 100.0, "vs_nominal": 0.25, "throughput_fraction": 0.2}
    assert Bottleneck.from_dict({"link": None, "capacity_gbps": 0.0, "flows": 2, "reason": "no route"}).as_dict() == {
        "link": None, "direction": None, "capacity_gbps": 0.0, "flows": 2, "reason": "no route"}


def test_pair_rows_go_to_columns_and_back_as_their_json_objects_do(swept):
    from fabricdoc.report.pairs import pair_columns, row_columns, rows_from_columns

    rows = swept.pairs
    assert row_columns(rows) == pair_columns([p.as_dict() for p in rows])
    assert rows_from_columns(row_columns(rows)) == rows
    older = [{k: v for k, v in p.as_dict().items() if k not in ("slow", "round")} for p in rows]
    assert [p.as_dict() for p in rows_from_columns(pair_columns(older))] == older
