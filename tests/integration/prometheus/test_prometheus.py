"""The exporter scraped by a real Prometheus server (Debian ``prometheus``) on 127.0.0.1, queried over its API.

Each test starts its own server (own config, TSDB and port) and its own
exporter, and stops both; they skip when the prometheus binary is missing.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from fabricdoc import __version__
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations, PortCounters
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exporter import FabricCollector
from fabricdoc.scheduler.exposition import serve
from fabricdoc.sources.sim.simulator import Simulator, random_faults
from tests.helpers.evidence import port_down, symbol_errors
from tests.helpers.prometheus import MISSING, Prometheus, prometheus_binary
from tests.helpers.reports import make_report, nic_down, store
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.prometheus, pytest.mark.skipif(prometheus_binary() is None, reason=MISSING)]

LINK_KEY = "link:leaf01/3~spine01/1:symbol_errors"


@pytest.fixture
def exporter():
    """Start an exporter on 127.0.0.1 (a free port); returns its collector and ``host:port``."""
    servers = []

    def start(report, history=None) -> tuple[FabricCollector, str]:
        collector = FabricCollector(report, history)
        srv = serve(collector, "127.0.0.1", 0, poll_s=0.2)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        servers.append(srv)
        host, port = srv.server_address[:2]
        return collector, f"{host}:{port}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _link(a: str, pa: int, b: str, pb: int, fault: str, sev: str, ev) -> Finding:
    return Finding("", "link", f"{a}[{pa}] -- {b}[{pb}]", fault, sev, 0.8, ev, [(a, pa), (b, pb)], [a, b])


def test_prometheus_scrapes_findings_by_key_port_counters_and_drops_a_broken_report(tmp_path, exporter):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    findings = [nic_down("node0001"), nic_down("node0003"),
                _link("leaf01", 3, "spine01", 1, "symbol_errors", "warning", [symbol_errors("leaf01", 3)])]
    report = tmp_path / "r.json"
    make_report(findings=findings, fabric=fabric).save(report)
    db = tmp_path / "h.sqlite"
    t0 = datetime.now(UTC) - timedelta(days=2)
    for day, sym in enumerate((0, 100)):
        old = make_report(fabric=fabric)
        old.generated_at = (t0 + timedelta(days=day)).isoformat()
        t = (t0 + timedelta(days=day)).timestamp()
        store(db, old, counters=[PortCounters("leaf01", 3, t, {"SymbolErrorCounter": sym, "PortRcvData": 10 * day})])
    collector, target = exporter(report, db)
    (tmp_path / "prom").mkdir()
    with Prometheus(tmp_path / "prom", {"fabricdoc": target}) as prom:
        assert prom.wait_value('up{job="fabricdoc"} == 1') == 1
        assert prom.wait_value('fabricdoc_report_loaded{job="fabricdoc"}') == 1
        assert prom.value("sum(fabricdoc_findings)") == 3  # one row per finding, no aggregate rows
        assert prom.value("count(fabricdoc_finding)") == 3
        assert prom.value(f'fabricdoc_finding{{key="{LINK_KEY}"}}') == pytest.approx(0.8)
        # Each finding by the id every output shows (stable like the key), never by its label.
        assert prom.value(f'fabricdoc_finding{{id="{findings[2].id}",key="{LINK_KEY}"}}') == pytest.approx(0.8)
        assert len(prom.query('fabricdoc_finding{id=~"[0-9a-f]{6}"}')) == 3
        assert prom.query('fabricdoc_finding{name!=""}') == []
        assert prom.value('fabricdoc_drain{node="node0003"}') == 1
        assert prom.value(f'fabricdoc_build_info{{version="{__version__}"}}') == 1
        assert prom.value('fabricdoc_infiniband_symbol_error_total{device="leaf01",port="3"}') == 100
        assert prom.value('fabricdoc_infiniband_port_data_received_bytes_total{device="leaf01",port="3"}') == 40
        assert prom.value('fabricdoc_infiniband_state_id{device="spine01",port="1",peer="leaf01[3]"}') == 4
        # Prometheus read every sample the exporter says it serves.
        assert prom.value('scrape_samples_scraped{job="fabricdoc"}') == collector.series

        report.write_bytes(b'{"schema": "fabricdoc.report/v1", "verdict": "\xff\xfe"}')  # not UTF-8
        wait_for(lambda: prom.value("fabricdoc_report_loaded") == 0, 30, "prometheus to see report_loaded 0", 0.2)
        # The old report's series are gone from the scrape, so Prometheus marks them stale at once.
        wait_for(lambda: prom.query("fabricdoc_finding") == [], 30, "the findings to go stale", 0.2)
        assert prom.query("fabricdoc_drain") == [] and prom.query("fabricdoc_verdict") == []
        assert prom.value("fabricdoc_report_load_errors_total") == 1
        assert prom.value('fabricdoc_infiniband_symbol_error_total{device="leaf01",port="3"}') == 100  # history stays
        assert prom.value('up{job="fabricdoc"}') == 1


_AS_FINDING = {"lossy": ("symbol_errors", "warning"), "flapping": ("flapping", "error"),
               "degraded": ("degraded", "warning"), "down": ("down", "error"), "congested": ("congested", "warning")}


@pytest.mark.slow
def test_an_8192_host_fabric_with_history_scrapes_within_a_1s_timeout_in_under_20000_series(tmp_path, exporter):
    fabric = fat_tree_3(32)
    faults = random_faults(fabric, 24, np.random.default_rng(5), kinds=tuple(_AS_FINDING))
    findings = []
    for f in faults:
        key = f.link(fabric)
        la, lb = fabric.label(key.a.node), fabric.label(key.b.node)
        fault, sev = _AS_FINDING[f.kind]
        ev = [port_down(la, key.a.port)] if f.kind == "down" else [symbol_errors(la, key.a.port)]
        findings.append(_link(la, key.a.port, lb, key.b.port, fault, sev, ev))
    db = tmp_path / "h.sqlite"
    for n, start in enumerate((datetime.now(UTC).timestamp() - 7200, datetime.now(UTC).timestamp() - 60)):
        sim = Simulator(fabric, faults, seed=n, start_time=start)
        before, after = sim.counters()
        rep = Report.build(sim.truth, findings, Observations(before=before, after=after))
        store(db, rep, counters=before + after)
    rep.save(tmp_path / "r.json")
    collector, target = exporter(tmp_path / "r.json", db)
    (tmp_path / "prom").mkdir()
    with Prometheus(tmp_path / "prom", {"fabricdoc": target}) as prom:
        # interval 1 s, so scrape_timeout 1 s: up == 1 means the scrape finished within a second.
        assert prom.wait_value('up{job="fabricdoc"} == 1', 60) == 1
        samples = prom.wait_value('scrape_samples_scraped{job="fabricdoc"}')
        assert samples == collector.series < 20_000
        assert prom.value("fabricdoc_report_loaded") == 1
        assert prom.value("sum(fabricdoc_findings)") == len(findings)
        down = sum(f.kind == "down" for f in faults)
        degraded = sum(f.kind == "degraded" for f in faults)
        assert (prom.value("count(fabricdoc_infiniband_state_id == 1)") or 0) == 2 * down
        assert (prom.value("count(fabricdoc_port_width_lanes < fabricdoc_port_supported_width_lanes)") or 0) == 2 * degraded
        assert prom.value("fabricdoc_links_degraded") == degraded
