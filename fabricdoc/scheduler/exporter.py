"""Prometheus metrics from a report file and/or the sweep history, re-read when they change.

Metric names start with ``fabricdoc_`` and do not change between releases:

- ``fabricdoc_report_loaded`` 1 when the last read of the report file worked
  (a bad file keeps the previous report's series), ``fabricdoc_report_timestamp_seconds``
- ``fabricdoc_verdict{verdict}`` 1 for the last sweep's verdict, 0 for the others
- ``fabricdoc_findings{severity,kind}`` counts, ``fabricdoc_finding{id,kind,name,fault,severity}`` confidence
- ``fabricdoc_drain{node}`` 1 per host to drain, ``fabricdoc_drain_nodes`` their count
- ``fabricdoc_pairs{status}``, ``fabricdoc_allreduce_busbw_gbps{basis}``
- per port, from the history's newest samples: ``fabricdoc_port_<counter>_total{node,port,guid,peer}``
  (canonical units, e.g. ``fabricdoc_port_symbol_errors_total``, ``fabricdoc_port_xmit_bytes_total``)
  and ``fabricdoc_port_<counter>_per_second`` between the last two samples.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, make_wsgi_app

from fabricdoc.errors import FabricdocError
from fabricdoc.model.counters import lookup
from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.times import epoch
from fabricdoc.report.history import History
from fabricdoc.report.report import Report

VERDICTS = ("pass", "degraded", "fail", "incomplete")
_PORT_LABELS = ["node", "port", "guid", "peer"]


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: an atomic rewrite gives a new inode even within one mtime tick."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


class FabricCollector:
    """A prometheus_client collector over a report path and/or a history file, reloaded on change."""

    def __init__(self, report_path: str | Path | None = None, history_path: str | Path | None = None) -> None:
        if report_path is None and history_path is None:
            raise FabricdocError("exporter: give a report file, a history file, or both")
        self.report_path = Path(report_path) if report_path is not None else None
        self.history_path = Path(history_path) if history_path is not None else None
        self._lock = threading.Lock()
        self._report: Report | None = None
        self._report_stamp: tuple[int, int, int] | None = None
        self._report_ok = False
        self._report_error: str | None = None
        self._loads = 0
        self._load_errors = 0

    def report(self) -> Report | None:
        """The current report, re-read when the file's mtime or size changed."""
        if self.report_path is None:
            return None
        with self._lock:
            stamp = _stamp(self.report_path)
            if stamp != self._report_stamp:
                self._report_stamp = stamp
                try:
                    self._report = Report.load(self.report_path)
                    self._report_ok, self._report_error = True, None
                    self._loads += 1
                except FabricdocError as exc:
                    # Keep serving the last good report; say the file is bad.
                    self._report_ok, self._report_error = False, str(exc)
                    self._load_errors += 1
            return self._report

    def collect(self) -> Iterator[Metric]:
        rep = self.report()
        if self.report_path is not None:
            yield from self._report_metrics(rep)
        if self.history_path is not None:
            yield from self._history_metrics()

    def describe(self) -> list[Metric]:
        return []  # names depend on the counters present: do not pre-register them

    # -- report ------------------------------------------------------------------
    def _report_metrics(self, rep: Report | None) -> Iterator[Metric]:
        g = GaugeMetricFamily("fabricdoc_report_loaded", "1 when the last read of the report file succeeded")
        g.add_metric([], 1.0 if self._report_ok else 0.0)
        yield g
        c = CounterMetricFamily("fabricdoc_report_load_errors", "Times the report file could not be read or validated")
        c.add_metric([], float(self._load_errors))
        yield c
        if rep is None:
            return
        g = GaugeMetricFamily("fabricdoc_report_timestamp_seconds", "When the report was generated (epoch seconds)")
        try:
            g.add_metric([], epoch(rep.generated_at, "report time"))
            yield g
        except FabricdocError:
            pass
        g = GaugeMetricFamily("fabricdoc_verdict", "The last sweep's verdict: 1 for the current one", labels=["verdict"])
        for v in VERDICTS:
            g.add_metric([v], 1.0 if rep.verdict == v else 0.0)
        yield g
        counts: dict[tuple[str, str], int] = {}
        for f in rep.findings:
            counts[(f.severity, f.kind)] = counts.get((f.severity, f.kind), 0) + 1
        g = GaugeMetricFamily("fabricdoc_findings", "Findings in the last report by severity and kind", labels=["severity", "kind"])
        for sev in SEVERITIES:
            g.add_metric([sev, "any"], float(sum(n for (s, _), n in counts.items() if s == sev)))
        for (sev, kind), n in sorted(counts.items()):
            g.add_metric([sev, kind], float(n))
        yield g
        g = GaugeMetricFamily(
            "fabricdoc_finding",
            "One finding of the last report; the value is its confidence (0..1)",
            labels=["id", "kind", "name", "fault", "severity", "component"],
        )
        for f in rep.findings:
            g.add_metric([f.id, f.kind, f.name, f.fault, f.severity, f.component], float(f.confidence))
        yield g
        g = GaugeMetricFamily("fabricdoc_drain", "Hosts the last report says to drain (1 each)", labels=["node"])
        for d in rep.drain:
            g.add_metric([d.node], 1.0)
        yield g
        g = GaugeMetricFamily("fabricdoc_drain_nodes", "Number of hosts the last report says to drain")
        g.add_metric([], float(len(rep.drain)))
        yield g
        g = GaugeMetricFamily("fabricdoc_pairs", "Bandwidth-test pairs in the last sweep by outcome", labels=["status"])
        for key, status in (("pairs_tested", "tested"), ("pairs_slow", "slow"), ("pairs_hung", "hung"), ("pairs_wrong", "wrong"), ("pairs_error", "error")):
            val = rep.tests.get(key)
            if isinstance(val, int | float):
                g.add_metric([status], float(val))
        yield g
        bw = (rep.impact or {}).get("allreduce_busbw_gbps") or {}
        g = GaugeMetricFamily("fabricdoc_allreduce_busbw_gbps", "Predicted AllReduce bus bandwidth", labels=["basis"])
        for basis in ("nominal", "now", "after_drain"):
            if isinstance(bw.get(basis), int | float):
                g.add_metric([basis], float(bw[basis]))
        yield g

    # -- history -------------------------------------------------------------------
    def _history_metrics(self) -> Iterator[Metric]:
        assert self.history_path is not None
        up = GaugeMetricFamily("fabricdoc_history_loaded", "1 when the history file could be read")
        if not self.history_path.exists():
            up.add_metric([], 0.0)
            yield up
            return
        try:
            with History(self.history_path) as h:
                latest, rates = h.latest_counters()
                sweeps = len(h.sweeps())
        except FabricdocError:
            up.add_metric([], 0.0)
            yield up
            return
        up.add_metric([], 1.0)
        yield up
        g = GaugeMetricFamily("fabricdoc_history_sweeps", "Sweeps stored in the history")
        g.add_metric([], float(sweeps))
        yield g
        totals: dict[str, dict[tuple[str, ...], float]] = {}
        gauges: dict[str, dict[tuple[str, ...], float]] = {}
        for facts, pc in latest:
            labels = _labels(facts, pc.node, pc.port)
            for name, value in pc.values.items():
                cdef = lookup(name)
                if cdef is None or value is None:
                    continue
                into = gauges if cdef.cls == "gauge" else totals
                slot = into.setdefault(cdef.canonical, {})
                slot[labels] = slot.get(labels, 0.0) + value * cdef.scale
        for canon in sorted(totals):
            fam = CounterMetricFamily(f"fabricdoc_port_{canon}", f"Port counter {canon} (canonical units), newest sample", labels=_PORT_LABELS)
            for labels, v in sorted(totals[canon].items()):
                fam.add_metric(list(labels), v)
            yield fam
        for canon in sorted(gauges):
            fam = GaugeMetricFamily(f"fabricdoc_port_{canon}", f"Port gauge {canon}, newest sample", labels=_PORT_LABELS)
            for labels, v in sorted(gauges[canon].items()):
                fam.add_metric(list(labels), v)
            yield fam
        by_counter: dict[str, list[Any]] = {}
        for row in rates.itertuples():
            by_counter.setdefault(row.counter, []).append(row)
        for canon in sorted(by_counter):
            fam = GaugeMetricFamily(
                f"fabricdoc_port_{canon}_per_second", f"Rate of {canon} between the port's last two samples", labels=_PORT_LABELS
            )
            for row in by_counter[canon]:
                fam.add_metric(list(_labels({"label": row.label, "guid": row.guid, "peer": row.peer}, row.node, row.port)), float(row.per_second))
            yield fam


def _labels(facts: dict[str, Any], node: str, port: int) -> tuple[str, ...]:
    return (str(facts.get("label") or node), str(port), str(facts.get("guid") or ""), str(facts.get("peer") or ""))


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


def make_app(collector: FabricCollector):
    """A WSGI app serving ``/metrics`` from a registry holding only ``collector``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return make_wsgi_app(registry)


def serve(collector: FabricCollector, bind: str = "127.0.0.1", port: int = 9877):
    """Start an HTTP server for the collector (``serve_forever`` it, ``shutdown`` to stop); port 0 picks one."""
    try:
        return make_server(bind, port, make_app(collector), server_class=ThreadingWSGIServer, handler_class=_QuietHandler)
    except OSError as exc:
        raise FabricdocError(f"exporter: cannot listen on {bind}:{port}: {os.strerror(exc.errno) if exc.errno else exc}") from None
