"""The exporter scraped over HTTP on 127.0.0.1, parsed with prometheus_client's own parser."""

from __future__ import annotations

import gzip
import json
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.counters import COUNTERS, PATTERNS
from fabricdoc.model.counters import totals as canonical_values
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortCounters
from fabricdoc.report.report import Report
from fabricdoc.scheduler import exporter as exporter_mod
from fabricdoc.scheduler.exporter import FabricCollector
from fabricdoc.scheduler.exporter_metrics import CounterMetric, counter_metric
from fabricdoc.scheduler.exposition import serve
from tests.helpers.cli import run_fabricdoc
from tests.helpers.evidence import port_down, switch_links, symbol_errors
from tests.helpers.reports import make_report, nic_down, store
from tests.helpers.waiting import wait_for

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
PORT_LEAF01_3 = {"device": "leaf01", "port": "3", "peer": "spine01[1]"}


def parse(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.name.startswith("fabricdoc_")
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        return parse(resp.read().decode())


def collected(collector: FabricCollector) -> dict[tuple[str, tuple], float]:
    collector.refresh()
    return parse(collector.exposition().decode())


def series(samples, metric, **labels):
    want = tuple(sorted(labels.items()))
    hits = [v for (n, lab), v in samples.items() if n == metric and set(want) <= set(lab)]
    assert hits, f"no {metric}{labels} in {sorted({n for n, _ in samples})}"
    return hits[0]


def names(samples) -> set[str]:
    return {n for n, _ in samples}


def labelled(samples, metric) -> list[dict[str, str]]:
    return [dict(lab) for (n, lab) in samples if n == metric]


@pytest.fixture
def served():
    servers = []

    def start(report=None, hist=None, **kw):
        timeout = kw.pop("client_timeout_s", 30.0)
        srv = serve(FabricCollector(report, hist, **kw), "127.0.0.1", 0, client_timeout_s=timeout, poll_s=0.05)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        host, port = srv.server_address[:2]
        return f"http://{host}:{port}/metrics"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _history(tmp_path, ports=(("leaf01", 3, (0, 100), (1000, 1000 + 86400)),)):
    """Two sweeps a day apart; each port's (symbol errors, xmit words) in the first and the second."""
    db = tmp_path / "h.sqlite"
    for day in range(2):
        t = T0 + timedelta(days=day)
        rep = make_report()
        rep.generated_at = t.isoformat()
        samples = [PortCounters(node, port, t.timestamp(), {"SymbolErrorCounter": sym[day], "PortXmitData": words[day]})
                   for node, port, sym, words in ports]
        store(db, rep, counters=samples)
    return db


def _link_finding(fabric, a: str, pa: int, b: str, pb: int, fault="symbol_errors", fid="F009") -> Finding:
    return Finding(fid, "link", f"{a}[{pa}] -- {b}[{pb}]", fault, "warning", 0.8, [symbol_errors(a, pa)],
                   [(a, pa), (b, pb)], [a, b])


# -- what a scrape holds -------------------------------------------------------------
def test_scrape_returns_verdict_findings_drain_and_node_exporter_named_port_series(tmp_path, served):
    rep = tmp_path / "r.json"
    make_report(bad_hosts=["node0001", "node0003"]).save(rep)
    s = scrape(served(rep, _history(tmp_path)))
    assert series(s, "fabricdoc_verdict", verdict="fail") == 1
    assert series(s, "fabricdoc_verdict", verdict="pass") == 0
    assert series(s, "fabricdoc_drain", node="node0003") == 1
    assert series(s, "fabricdoc_drain_nodes") == 2
    assert series(s, "fabricdoc_findings", severity="error", kind="nic") == 2
    assert series(s, "fabricdoc_finding", key="nic:node0001:down", fault="down", severity="error") == pytest.approx(0.95)
    assert series(s, "fabricdoc_report_loaded") == 1
    assert series(s, "fabricdoc_report_stale") == 0
    assert series(s, "fabricdoc_history_loaded") == 1
    assert series(s, "fabricdoc_history_sweeps") == 2
    from fabricdoc import __version__

    assert series(s, "fabricdoc_build_info", version=__version__) == 1
    # node_exporter's infiniband names and labels (device, port), base units (IB words x 4 = bytes).
    assert series(s, "fabricdoc_infiniband_symbol_error_total", **PORT_LEAF01_3) == 100
    assert series(s, "fabricdoc_infiniband_port_data_transmitted_bytes_total", **PORT_LEAF01_3) == 4 * (1000 + 86400)
    assert series(s, "fabricdoc_infiniband_symbol_error_per_second", **PORT_LEAF01_3) == pytest.approx(100 / 86400)
    assert series(s, "fabricdoc_infiniband_port_data_transmitted_bytes_per_second", **PORT_LEAF01_3) == pytest.approx(4.0)
    guid = labelled(s, "fabricdoc_infiniband_symbol_error_total")[0]["guid"]
    assert guid.startswith("0x") and len(guid) == 18


def test_findings_are_counted_once_and_carry_their_stable_id_and_key(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    link = _link_finding(fabric, "leaf01", 3, "spine01", 1)
    keys = set()
    for order in ((nic_down("node0002", "F001"), link), (link, nic_down("node0002", "F007"))):
        path = tmp_path / "r.json"
        make_report(findings=order, fabric=fabric).save(path)
        s = collected(FabricCollector(path))
        assert sum(v for (n, _), v in s.items() if n == "fabricdoc_findings") == 2  # no "any" rows to double count
        found = labelled(s, "fabricdoc_finding")
        assert len(found) == 2
        for lab in found:
            assert set(lab) == {"id", "key", "kind", "component", "fault", "severity"}  # no name: a rename
            assert re.fullmatch(r"[0-9a-f]{6}", lab["id"])                             # is not a new finding
        keys.add(frozenset((lab["id"], lab["key"]) for lab in found))
    assert {k for _, k in next(iter(keys))} == {"nic:node0002:down", "link:leaf01/3~spine01/1:symbol_errors"}
    assert len(keys) == 1  # the same ids and keys whichever order the report lists them in


def test_pairs_by_outcome_add_up_to_the_tests_run_and_busbw_is_in_bytes_per_second(tmp_path):
    job = {"n_hosts": 4, "hours": 1.0, "failure_probability": 0.0, "mtbf_hours": None,
           "recommended_checkpoint_minutes": None, "expected_goodput": 1.0, "rate_source": "test"}
    rep = make_report(impact={"allreduce_busbw_gbps": {"nominal": 400.0, "now": 200.0, "after_drain": None}, "job": job})
    rep.tests.update(pairs_tested=10, pairs_slow=2, pairs_hung=1, pairs_wrong=0, pairs_error=1)
    rep.save(tmp_path / "r.json")
    s = collected(FabricCollector(tmp_path / "r.json"))
    pairs = {lab["status"]: s[("fabricdoc_pairs", tuple(sorted(lab.items())))] for lab in labelled(s, "fabricdoc_pairs")}
    assert pairs == {"ok": 6, "slow": 2, "hung": 1, "wrong": 0, "error": 1}
    assert series(s, "fabricdoc_allreduce_busbw_bytes_per_second", basis="now") == 200e9 / 8
    assert "fabricdoc_allreduce_busbw_gbps" not in names(s)


# -- which ports get series ----------------------------------------------------------------
def test_default_exports_only_flagged_ports_and_all_ports_exports_every_port(tmp_path):
    db = _history(tmp_path, ports=(
        ("leaf01", 3, (0, 100), (1000, 2000)),  # symbol errors moved: flagged
        ("leaf01", 1, (5, 5), (1000, 9000)),  # only traffic moved: not flagged
        ("leaf02", 3, (7, 7), (0, 0)),  # nothing moved
    ))
    path = tmp_path / "r.json"
    make_report(bad_hosts=["node0004"]).save(path)  # names node0004's one port
    s = collected(FabricCollector(path, db))
    got = {(lab["device"], lab["port"]) for lab in labelled(s, "fabricdoc_infiniband_symbol_error_total")}
    assert got == {("leaf01", "3")}
    states = {(lab["device"], lab["port"]) for lab in labelled(s, "fabricdoc_infiniband_state_id")}
    assert states == {("leaf01", "3"), ("node0004", "1")}
    assert series(s, "fabricdoc_exporter_ports_exported") == 2

    s = collected(FabricCollector(path, db, all_ports=True))
    got = {(lab["device"], lab["port"]) for lab in labelled(s, "fabricdoc_infiniband_symbol_error_total")}
    assert got == {("leaf01", "3"), ("leaf01", "1"), ("leaf02", "3")}
    assert len(labelled(s, "fabricdoc_infiniband_state_id")) == 12  # both ends of all 6 links
    assert series(s, "fabricdoc_infiniband_port_data_transmitted_bytes_total", device="leaf01", port="1") == 4 * 9000


def test_port_state_width_and_rate_gauges_show_a_down_and_a_half_width_link(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    links = {str(k): lk for k, lk in fabric.links.items()}
    links["leaf01[2]--node0002[1]"].lanes = 2
    links["leaf02[3]--spine01[2]"].state = "down"
    path = tmp_path / "r.json"
    make_report(fabric=fabric).save(path)
    s = collected(FabricCollector(path))
    half = {"device": "node0002", "port": "1"}
    assert series(s, "fabricdoc_port_width_lanes", **half) == 2
    assert series(s, "fabricdoc_port_supported_width_lanes", **half) == 4
    assert series(s, "fabricdoc_infiniband_rate_bytes_per_second", **half) == 2 * 100e9 / 8
    assert series(s, "fabricdoc_port_supported_rate_bytes_per_second", **half) == 4 * 100e9 / 8
    assert series(s, "fabricdoc_infiniband_state_id", **half) == 4
    assert series(s, "fabricdoc_infiniband_state_id", device="spine01", port="2", peer="leaf02[3]") == 1
    assert series(s, "fabricdoc_infiniband_rate_bytes_per_second", device="spine01", port="2") == 0
    assert series(s, "fabricdoc_links", state="down") == 1
    assert series(s, "fabricdoc_links", state="up") == 5
    assert series(s, "fabricdoc_links_degraded") == 1
    assert {lab["device"] for lab in labelled(s, "fabricdoc_infiniband_state_id")} == {"node0002", "leaf01", "leaf02", "spine01"}


def test_a_switch_finding_exports_every_cabled_port_of_that_switch(tmp_path):
    f = Finding("F001", "switch", "leaf02", "dead", "critical", 0.9, [switch_links(3, 3, 3)], None, ["leaf02"])
    make_report(findings=[f]).save(tmp_path / "r.json")
    s = collected(FabricCollector(tmp_path / "r.json"))
    ports = {(lab["device"], lab["port"]) for lab in labelled(s, "fabricdoc_infiniband_state_id")}
    assert ports == {("leaf02", "1"), ("leaf02", "2"), ("leaf02", "3")}


# -- names and units -------------------------------------------------------------------------
def test_every_known_counter_has_a_valid_name_with_prometheus_suffixes():
    valid = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
    canon = {d.canonical for d in COUNTERS.values() if d.cls != "gauge"} | {d.canonical for _, d in PATTERNS}
    for c in canon:
        m = counter_metric(c)
        assert valid.match(m.total) and valid.match(m.rate), c
        assert m.total.endswith("_total") and m.rate.endswith("_per_second"), c
        assert not m.total.endswith("_us_total"), c  # base units: seconds
    assert counter_metric("symbol_errors").total == "fabricdoc_infiniband_symbol_error_total"
    assert counter_metric("rcv_bytes").total == "fabricdoc_infiniband_port_data_received_bytes_total"
    assert counter_metric("xmit_wait_ticks").total == "fabricdoc_infiniband_port_transmit_wait_total"
    assert counter_metric("pause_rx_us") == CounterMetric(
        "fabricdoc_port_pause_rx_seconds_total", "fabricdoc_port_pause_rx_per_second", 1e-6, "pause_rx_us in seconds")


def test_one_quantity_under_two_vendor_names_is_not_summed_but_priorities_are():
    totals, gauges = canonical_values({"rx_bytes": 10, "rx_bytes_phy": 12, "rx_prio3_pause": 2, "rx_prio4_pause": 5,
                                       "qdisc_backlog_bytes": 7, "SymbolErrorCounter": None, "no_such": 1})
    assert totals == {"rcv_bytes": 12.0, "pause_rx_frames": 7.0}  # the port-level _phy counter, not 22
    assert gauges == {"qdisc_backlog_bytes": 7.0}
    assert canonical_values({"PortRcvData": 5})[0] == {"rcv_bytes": 20.0}


def test_untrusted_names_are_escaped_into_valid_exposition_text(tmp_path):
    evil = 'leaf"01\\\n} fabricdoc_verdict{verdict="pass"} 1'
    f = Finding("X1", "switch", "x", "dead", "critical", 0.9, [switch_links(8, 8, 8)], None, [evil])
    make_report(findings=[f]).save(tmp_path / "r.json")
    s = collected(FabricCollector(tmp_path / "r.json"))
    assert series(s, "fabricdoc_finding", component=evil, key=f"switch:{evil}:dead") == pytest.approx(0.9)
    assert series(s, "fabricdoc_verdict", verdict="pass") == 0


# -- bad, stale and changing reports -------------------------------------------------------------
def _too_deep() -> bytes:
    return b'{"schema": "fabricdoc.report/v1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"


@pytest.mark.parametrize("bad", [
    pytest.param(b'{"schema": "fabricdoc.report/v1", "verdict": "\xff\xfe"}', id="invalid-utf8"),
    pytest.param(_too_deep(), id="too-deeply-nested"),
    pytest.param(b'{"schema": "fabricdoc.report/v1", "truncated', id="truncated"),
    pytest.param(b'{"schema": "fabricdoc.report/v1"}', id="not-the-schema"),
])
def test_a_bad_report_after_a_good_one_serves_nothing_from_either(tmp_path, bad):
    path, db = tmp_path / "r.json", _history(tmp_path)
    make_report(bad_hosts=["node0002"]).save(path)
    c = FabricCollector(path, db)
    assert series(collected(c), "fabricdoc_drain", node="node0002") == 1
    path.write_bytes(bad)
    s = collected(c)
    assert series(s, "fabricdoc_report_loaded") == 0
    assert series(s, "fabricdoc_report_stale") == 0
    assert series(s, "fabricdoc_report_load_errors_total") == 1
    for gone in ("fabricdoc_verdict", "fabricdoc_findings", "fabricdoc_finding", "fabricdoc_drain",
                 "fabricdoc_drain_nodes", "fabricdoc_infiniband_state_id", "fabricdoc_report_info"):
        assert gone not in names(s), gone
    # The history is its own source: its flagged port is still there.
    assert series(s, "fabricdoc_infiniband_symbol_error_total", **PORT_LEAF01_3) == 100
    make_report().save(path)
    s = collected(c)
    assert series(s, "fabricdoc_report_loaded") == 1
    assert series(s, "fabricdoc_verdict", verdict="pass") == 1


@pytest.mark.parametrize("shift", [timedelta(days=30), -timedelta(days=210)], ids=["month-old", "seven-months-ahead"])
def test_a_stale_or_future_dated_report_is_refused(tmp_path, shift):
    rep = make_report(bad_hosts=["node0001"])
    rep.generated_at = (datetime.now(UTC) - shift).isoformat(timespec="seconds")
    rep.save(tmp_path / "r.json")
    lines: list[str] = []
    s = collected(FabricCollector(tmp_path / "r.json", log=lines.append))
    assert series(s, "fabricdoc_report_loaded") == 0
    assert series(s, "fabricdoc_report_stale") == 1
    assert series(s, "fabricdoc_report_load_errors_total") == 0
    assert "fabricdoc_finding" not in names(s) and "fabricdoc_drain" not in names(s) and "fabricdoc_verdict" not in names(s)
    assert series(s, "fabricdoc_report_timestamp_seconds") == pytest.approx(datetime.fromisoformat(rep.generated_at).timestamp())
    assert len(lines) == 1 and "refused" in lines[0] and ("old" in lines[0] or "future" in lines[0])
    # No age limit (0) accepts the old one; a report from the future is refused either way.
    s = collected(FabricCollector(tmp_path / "r.json", max_age_h=0))
    assert series(s, "fabricdoc_report_loaded") == (1 if shift > timedelta(0) else 0)


def test_a_report_that_ages_past_the_limit_is_refused_without_its_file_changing(tmp_path):
    make_report(bad_hosts=["node0001"]).save(tmp_path / "r.json")
    c = FabricCollector(tmp_path / "r.json", max_age_h=3 / 3600)
    assert series(collected(c), "fabricdoc_drain", node="node0001") == 1
    wait_for(lambda: c.refresh() and not c.report_loaded, 15, "the report to turn stale")
    s = parse(c.exposition().decode())
    assert series(s, "fabricdoc_report_stale") == 1
    assert "fabricdoc_drain" not in names(s)


def test_scrapes_serve_cached_bytes_and_read_the_report_once_per_change(tmp_path, served, monkeypatch):
    calls = []
    real = Report.load
    monkeypatch.setattr(Report, "load", classmethod(lambda cls, p: calls.append(p) or real(p)))
    path = tmp_path / "r.json"
    make_report(bad_hosts=["node0002"]).save(path)
    url = served(path)
    for _ in range(5):
        assert series(scrape(url), "fabricdoc_verdict", verdict="fail") == 1
    assert len(calls) == 1
    make_report().save(path)  # an atomic rewrite, as sweeps write reports
    wait_for(lambda: scrape(url).get(("fabricdoc_verdict", (("verdict", "pass"),))) == 1, 10, "the rewrite to be served")
    assert len(calls) == 2


def test_gzip_is_served_when_asked_and_holds_the_same_text(tmp_path, served):
    make_report(bad_hosts=["node0001"]).save(tmp_path / "r.json")
    url = served(tmp_path / "r.json")
    with urllib.request.urlopen(url, timeout=10) as resp:
        plain = resp.read()
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(resp.read()) == plain


def test_history_alone_missing_or_unreadable_is_history_loaded_0(tmp_path):
    db = _history(tmp_path)
    s = collected(FabricCollector(None, db))
    assert series(s, "fabricdoc_history_loaded") == 1
    assert "fabricdoc_report_loaded" not in names(s)
    assert series(s, "fabricdoc_infiniband_symbol_error_total", **PORT_LEAF01_3) == 100
    missing = tmp_path / "none.sqlite"
    s = collected(FabricCollector(None, missing))
    assert series(s, "fabricdoc_history_loaded") == 0
    assert not missing.exists()  # the exporter never creates a store
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all" * 100)
    s = collected(FabricCollector(None, junk))
    assert series(s, "fabricdoc_history_loaded") == 0


# -- connections ----------------------------------------------------------------------------------
@pytest.mark.parametrize("sent", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"], ids=["silent", "half-request"])
def test_an_idle_connection_is_dropped_after_the_timeout_while_scrapes_go_on(tmp_path, served, sent):
    make_report().save(tmp_path / "r.json")
    url = served(tmp_path / "r.json", client_timeout_s=0.5)
    port = int(url.split(":")[2].split("/")[0])
    idle = socket.create_connection(("127.0.0.1", port), timeout=20)
    try:
        idle.sendall(sent)
        assert series(scrape(url), "fabricdoc_report_loaded") == 1  # another client is served meanwhile
        t0 = time.monotonic()
        assert idle.recv(1024) == b""  # the server closed it: recv returns at end of stream
        assert time.monotonic() - t0 < 15
    finally:
        idle.close()
    assert series(scrape(url), "fabricdoc_report_loaded") == 1


def test_unknown_paths_are_404_and_metrics_is_at_metrics(tmp_path, served):
    make_report().save(tmp_path / "r.json")
    url = served(tmp_path / "r.json")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(url.replace("/metrics", "/nope"), timeout=10)
    assert err.value.code == 404


# -- the command ------------------------------------------------------------------------------------
def test_cli_exporter_binds_loopback_serves_and_stops_on_sigterm(tmp_path):
    rep = tmp_path / "r.json"
    make_report(bad_hosts=["node0004"]).save(rep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabricdoc", "exporter", "--report", str(rep), "--port", "0", "--all-ports",
         "--max-report-age-h", "48", "--client-timeout-s", "5"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        line = ""
        while "serving" not in line and time.monotonic() < deadline:
            if sel.select(timeout=max(deadline - time.monotonic(), 0)):
                line = proc.stderr.readline()
                assert line or proc.poll() is None, "exporter exited before serving"
        assert line.startswith("fabricdoc exporter: serving http://127.0.0.1:"), line
        url = line.split("serving ", 1)[1].strip()
        first = scrape(url)  # it answers at once: ready 0 until the first build is served
        assert series(first, "fabricdoc_exporter_ready") in (0, 1)
        s = wait_for(lambda: (got := scrape(url)).get(("fabricdoc_exporter_ready", ())) == 1 and got, 30,
                     "the first build to be served")
        assert series(s, "fabricdoc_drain", node="node0004") == 1
        assert len(labelled(s, "fabricdoc_infiniband_state_id")) == 12  # --all-ports
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_cli_help_documents_the_node_exporter_mapping_and_a_bad_age_is_one_line():
    res = run_fabricdoc("exporter", "--help")
    assert res.returncode == 0
    for text in ("fabricdoc_infiniband_symbol_error_total", "node_infiniband", "--all-ports", "--max-report-age-h",
                 "report_loaded"):
        assert text in res.stdout, text
    res = run_fabricdoc("exporter", "r.json", "--max-report-age-h", "-1")
    assert res.returncode == 2
    assert "Traceback" not in res.stderr and "max-report-age-h" in res.stderr.strip().splitlines()[-1]


def test_report_json_written_by_sweep_shape_round_trips_through_the_exporter(tmp_path):
    """A report loaded from JSON (as the exporter reads it) keeps the keys the live findings had."""
    rep = make_report(bad_hosts=["node0003"])
    path = tmp_path / "r.json"
    rep.save(path)
    data = json.loads(path.read_text())
    s = collected(FabricCollector(path))
    assert {lab["key"] for lab in labelled(s, "fabricdoc_finding")} == {f["key"] for f in data["findings"]}


def test_a_port_down_finding_flags_its_port(tmp_path):
    f = Finding("F001", "port", "leaf01[2]", "down", "error", 0.99, [port_down("leaf01", 2)], [("leaf01", 2)], ["leaf01"])
    make_report(findings=[f]).save(tmp_path / "r.json")
    s = collected(FabricCollector(tmp_path / "r.json"))
    assert {(lab["device"], lab["port"]) for lab in labelled(s, "fabricdoc_infiniband_state_id")} == {("leaf01", "2")}


def test_an_unexpected_failure_while_rendering_is_one_line_and_serves_no_report_series(tmp_path, monkeypatch):
    make_report(bad_hosts=["node0001"]).save(tmp_path / "r.json")
    lines: list[str] = []
    c = FabricCollector(tmp_path / "r.json", log=lines.append)
    assert series(collected(c), "fabricdoc_drain", node="node0001") == 1

    def broken(out, rep):
        raise KeyError("lanes")

    monkeypatch.setattr(exporter_mod, "report_metrics", broken)
    make_report(bad_hosts=["node0002"]).save(tmp_path / "r.json")
    assert c.refresh() is True
    s = parse(c.exposition().decode())
    assert series(s, "fabricdoc_report_loaded") == 0
    assert series(s, "fabricdoc_exporter_refresh_errors_total") == 1
    assert "fabricdoc_drain" not in names(s) and "fabricdoc_finding" not in names(s)
    assert lines[-1].startswith("refresh failed: KeyError")
    assert c.refresh() is False  # not retried (nor logged again) until a file changes


# -- start-up: answer at once, build on the watcher thread -----------------------------------------
def test_the_server_answers_before_the_first_build_with_ready_0_and_then_serves_the_files(tmp_path, monkeypatch):
    report = tmp_path / "r.json"
    make_report(bad_hosts=["node0002"]).save(report)
    db = _history(tmp_path, ports=(("leaf01", 3, (0, 100), (1000, 1000 + 86400)),))
    release = threading.Event()
    real = exporter_mod.read_history
    monkeypatch.setattr(exporter_mod, "read_history", lambda path: release.wait(30) and real(path))
    collector = FabricCollector(report, db)
    srv = serve(collector, "127.0.0.1", 0, poll_s=0.05, build_first=False)  # returns while the build is held
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = "http://{}:{}/metrics".format(*srv.server_address[:2])
    try:
        early = scrape(url)  # a valid exposition, not an error
        assert series(early, "fabricdoc_exporter_ready") == 0 and series(early, "fabricdoc_build_info") == 1
        assert not names(early) & {"fabricdoc_report_loaded", "fabricdoc_verdict", "fabricdoc_history_loaded"}
        release.set()
        assert collector.wait_ready(30)
        s = scrape(url)
        assert series(s, "fabricdoc_exporter_ready") == 1 and series(s, "fabricdoc_report_loaded") == 1
        assert series(s, "fabricdoc_drain", node="node0002") == 1
        assert series(s, "fabricdoc_infiniband_symbol_error_total", **PORT_LEAF01_3) == 100
    finally:
        release.set()
        srv.shutdown()
        srv.server_close()


def test_rates_come_from_each_ports_newest_two_samples_of_a_longer_history(tmp_path):
    db = tmp_path / "h.sqlite"
    words = (0, 10, 30, 1030)  # per day; the newest step is 1000 words (4000 bytes) in a day
    symbols = (0, 100, 150, 150)  # moved early on, not between the last two samples
    for day, (w, sym) in enumerate(zip(words, symbols, strict=True)):
        t = T0 + timedelta(days=day)
        rep = make_report()
        rep.generated_at = t.isoformat()
        store(db, rep, counters=[PortCounters("leaf01", 3, t.timestamp(), {"SymbolErrorCounter": sym,
                                                                             "PortXmitData": w})])
    s = collected(FabricCollector(None, db))
    assert series(s, "fabricdoc_history_sweeps") == len(words)
    assert series(s, "fabricdoc_exporter_ports_exported") == 0  # no error moved lately: not flagged
    s = collected(FabricCollector(None, db, all_ports=True))
    assert series(s, "fabricdoc_infiniband_port_data_transmitted_bytes_total", **PORT_LEAF01_3) == 4 * 1030
    assert series(s, "fabricdoc_infiniband_port_data_transmitted_bytes_per_second", **PORT_LEAF01_3) == \
        pytest.approx(4000 / 86400)
    assert series(s, "fabricdoc_infiniband_symbol_error_total", **PORT_LEAF01_3) == 150
    assert series(s, "fabricdoc_infiniband_symbol_error_per_second", **PORT_LEAF01_3) == 0
