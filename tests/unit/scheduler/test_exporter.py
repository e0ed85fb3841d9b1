"""The exporter scraped over HTTP on 127.0.0.1, parsed with prometheus_client's own parser."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortCounters
from fabricdoc.scheduler.exporter import FabricCollector, serve
from tests.helpers.evidence import switch_links
from tests.helpers.reports import make_report, store

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.name.startswith("fabricdoc_")
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def series(samples, metric, **labels):
    want = tuple(sorted(labels.items()))
    hits = [v for (n, lab), v in samples.items() if n == metric and set(want) <= set(lab)]
    assert hits, f"no {metric}{labels} in {sorted({n for n, _ in samples})}"
    return hits[0]


@pytest.fixture
def served(tmp_path):
    servers = []

    def start(report=None, hist=None):
        srv = serve(FabricCollector(report, hist), "127.0.0.1", 0)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        host, port = srv.server_address[:2]
        return f"http://{host}:{port}/metrics"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _history(tmp_path):
    db = tmp_path / "h.sqlite"
    for day, (sym, words) in enumerate([(0, 1000), (100, 1000 + 86400)]):
        t = T0 + timedelta(days=day)
        rep = make_report()
        rep.generated_at = t.isoformat()
        store(db, rep, counters=[PortCounters("leaf01", 3, t.timestamp(), {"SymbolErrorCounter": sym, "PortXmitData": words})])
    return db


def test_scrape_returns_verdict_findings_drain_and_per_port_series(tmp_path, served):
    rep = tmp_path / "r.json"
    make_report(bad_hosts=["node0001", "node0003"]).save(rep)
    s = scrape(served(rep, _history(tmp_path)))
    assert series(s, "fabricdoc_verdict", verdict="fail") == 1
    assert series(s, "fabricdoc_verdict", verdict="pass") == 0
    assert series(s, "fabricdoc_drain", node="node0003") == 1
    assert series(s, "fabricdoc_drain_nodes") == 2
    assert series(s, "fabricdoc_findings", severity="error", kind="nic") == 2
    assert series(s, "fabricdoc_finding", id="F001", fault="down", component="node0001") == pytest.approx(0.95)
    assert series(s, "fabricdoc_report_loaded") == 1
    port = {"node": "leaf01", "port": "3", "peer": "spine01[1]"}
    assert series(s, "fabricdoc_port_symbol_errors_total", **port) == 100
    assert series(s, "fabricdoc_port_xmit_bytes_total", **port) == 4 * (1000 + 86400)
    assert series(s, "fabricdoc_port_symbol_errors_per_second", **port) == pytest.approx(100 / 86400)
    assert series(s, "fabricdoc_port_xmit_bytes_per_second", **port) == pytest.approx(4.0)
    guid = [dict(lab)["guid"] for (n, lab) in s if n == "fabricdoc_port_symbol_errors_total"][0]
    assert guid.startswith("0x") and len(guid) == 18


def test_report_rewrite_is_picked_up_and_a_bad_file_keeps_the_last_good_series(tmp_path, served):
    rep = tmp_path / "r.json"
    make_report(bad_hosts=["node0002"]).save(rep)
    url = served(rep)
    assert series(scrape(url), "fabricdoc_verdict", verdict="fail") == 1
    make_report().save(rep)
    s = scrape(url)
    assert series(s, "fabricdoc_verdict", verdict="pass") == 1
    assert series(s, "fabricdoc_drain_nodes") == 0
    rep.write_text('{"schema": "fabricdoc.report/v1", "truncated')
    s = scrape(url)
    assert series(s, "fabricdoc_report_loaded") == 0
    assert series(s, "fabricdoc_report_load_errors_total") == 1
    assert series(s, "fabricdoc_verdict", verdict="pass") == 1


def test_untrusted_names_are_escaped_into_valid_exposition_text(tmp_path, served):
    evil = 'leaf"01\\\n} fabricdoc_verdict{verdict="pass"} 1'
    f = Finding("X1", "switch", evil, "dead", "critical", 0.9, [switch_links(8, 8, 8)], None, ["leaf01"])
    rep = tmp_path / "r.json"
    make_report(findings=[f]).save(rep)
    s = scrape(served(rep))
    assert series(s, "fabricdoc_finding", id="X1", name=evil) == pytest.approx(0.9)
    assert series(s, "fabricdoc_verdict", verdict="pass") == 0


def test_cli_exporter_binds_loopback_serves_and_stops_on_sigterm(tmp_path):
    rep = tmp_path / "r.json"
    make_report(bad_hosts=["node0004"]).save(rep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabricdoc", "exporter", "--report", str(rep), "--port", "0"],
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
        s = scrape(url)
        assert series(s, "fabricdoc_drain", node="node0004") == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
