"""Prometheus ``/metrics`` from a report file and/or the sweep history, built once per change.

Why it is built this way: an 8,192-host fat-tree has ~49,000 cabled ports. A
series for every counter of every port (and reading the history with pandas on
every scrape) gave a million series and 90-second scrapes. Here the watcher
thread re-reads the files only when they change (inode, mtime, size) or the
report's freshness flips, renders the text exposition once, and every scrape
serves those cached bytes (gzipped when asked). Per-port series are kept for the
ports that matter: those a finding names, those whose error or link-down
counters moved between the history's last two samples, and those whose link is
down or trained below its supported width or speed; ``all_ports`` exports every port.

A report that cannot be read (missing, not UTF-8, not JSON, nested too deep,
not the schema) or that is stale (older than ``max_age_h``, dated in the future,
or undated: :func:`fabricdoc.scheduler.freshness.staleness`) sets
``fabricdoc_report_loaded 0`` and serves nothing from any report: no verdict,
findings, drains or port states, neither its own nor an earlier one's.

Port counters use node_exporter's infiniband collector names and labels
(``node_infiniband_<suffix>{device,port}``) under the ``fabricdoc_`` prefix,
so an InfiniBand dashboard works after replacing ``node_`` with ``fabricdoc_``.
``device`` is the fabric node's label (an HCA's or a switch's description),
``port`` its port number; ``guid`` (the node GUID, the port's identity on IB)
and ``peer`` (``label[port]`` at the cable's other end) are added. Values are
the newest sample in the history, in base units (IB data words x 4 = bytes);
``..._per_second`` is the rate between the port's last two samples.

=====================================  ===========================================
fabricdoc counter (model.counters)     metric
=====================================  ===========================================
symbol_errors                          fabricdoc_infiniband_symbol_error_total
link_error_recovery                    fabricdoc_infiniband_link_error_recovery_total
link_downed                            fabricdoc_infiniband_link_downed_total
rcv_errors                             fabricdoc_infiniband_port_errors_received_total
rcv_remote_phys_errors                 fabricdoc_infiniband_port_receive_remote_physical_errors_total
rcv_switch_relay_errors                fabricdoc_infiniband_port_receive_switch_relay_errors_total
rx_discards / xmit_discards            fabricdoc_infiniband_port_discards_{received,transmitted}_total
rcv_/xmit_constraint_errors            fabricdoc_infiniband_port_constraint_errors_{received,transmitted}_total
local_link_integrity_errors            fabricdoc_infiniband_local_link_integrity_errors_total
buffer_overrun_errors                  fabricdoc_infiniband_excessive_buffer_overrun_errors_total
vl15_dropped                           fabricdoc_infiniband_vl15_dropped_total
xmit_wait_ticks                        fabricdoc_infiniband_port_transmit_wait_total
rcv_bytes / xmit_bytes                 fabricdoc_infiniband_port_data_{received,transmitted}_bytes_total
rcv_packets / xmit_packets             fabricdoc_infiniband_port_packets_{received,transmitted}_total
*_unicast_packets, *_multicast_packets fabricdoc_infiniband_{unicast,multicast}_packets_{received,transmitted}_total
any other counter C                    fabricdoc_port_C_total (``_us`` counters: ``fabricdoc_port_..._seconds_total``)
a gauge G (qdisc backlog)              fabricdoc_port_G
link state (report topology)           fabricdoc_infiniband_state_id (node_exporter's codes: 1 down, 4 active)
trained rate                           fabricdoc_infiniband_rate_bytes_per_second (0 when down)
trained / supported width, rate        fabricdoc_port_width_lanes, fabricdoc_port_supported_width_lanes,
                                       fabricdoc_port_supported_rate_bytes_per_second
=====================================  ===========================================

Everything else is fabricdoc's own (Prometheus conventions: base units,
``_total`` for counters): ``build_info{version}``; ``report_loaded``,
``report_stale``, ``report_load_errors_total``, ``report_timestamp_seconds``,
``report_info{producer,run_id}``; from a loaded report ``verdict{verdict}``,
``findings{severity,kind}`` (every combination, so ``sum()`` is the number of
findings), ``finding{id,key,kind,component,fault,severity}`` (its confidence; the
id, as every output shows it, and the key are the same in every sweep), ``drain{node}``,
``drain_nodes``, ``pairs{status}`` (ok, slow, hung, wrong, error: they add up
to the tests run), ``allreduce_busbw_bytes_per_second{basis}`` (nominal, now, after_drain, recommended: the figures the report and the TUI show),
``links{state}``, ``links_degraded``; from the history ``history_loaded``,
``history_sweeps``, ``history_timestamp_seconds``; and the exporter's own
``exporter_ready`` (0 until the first read of the files is served),
``exporter_ports_exported``, ``exporter_refresh_duration_seconds``,
``exporter_refresh_errors_total``.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from fabricdoc.errors import FabricdocError
from fabricdoc.model.counters import canonical_class, deltas
from fabricdoc.model.counters import totals as counter_totals
from fabricdoc.model.findings import Finding, FindingKind
from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.times import epoch
from fabricdoc.model.verdict import Verdict
from fabricdoc.report.figures import BUSBW_KEYS
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exposition import (
    POLL_S,
    Exposition,
    labels,
)
from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H, staleness

VERDICTS = tuple(v.value for v in Verdict)
PAIR_STATUSES = ("ok", "slow", "hung", "wrong", "error")

# fabricdoc's canonical counter -> node_exporter's infiniband collector suffix (same quantity).
NODE_EXPORTER_NAMES: dict[str, str] = {
    "symbol_errors": "symbol_error_total",
    "link_error_recovery": "link_error_recovery_total",
    "link_downed": "link_downed_total",
    "rcv_errors": "port_errors_received_total",
    "rcv_remote_phys_errors": "port_receive_remote_physical_errors_total",
    "rcv_switch_relay_errors": "port_receive_switch_relay_errors_total",
    "rx_discards": "port_discards_received_total",
    "xmit_discards": "port_discards_transmitted_total",
    "rcv_constraint_errors": "port_constraint_errors_received_total",
    "xmit_constraint_errors": "port_constraint_errors_transmitted_total",
    "local_link_integrity_errors": "local_link_integrity_errors_total",
    "buffer_overrun_errors": "excessive_buffer_overrun_errors_total",
    "vl15_dropped": "vl15_dropped_total",
    "xmit_wait_ticks": "port_transmit_wait_total",
    "rcv_bytes": "port_data_received_bytes_total",
    "xmit_bytes": "port_data_transmitted_bytes_total",
    "rcv_packets": "port_packets_received_total",
    "xmit_packets": "port_packets_transmitted_total",
    "rcv_unicast_packets": "unicast_packets_received_total",
    "xmit_unicast_packets": "unicast_packets_transmitted_total",
    "rcv_multicast_packets": "multicast_packets_received_total",
    "xmit_multicast_packets": "multicast_packets_transmitted_total",
}
# Counter classes whose movement makes a port worth its own series by default.
_ALARM_CLASSES = frozenset({"error", "event"})
_IB_STATE_ID = {"up": 4, "down": 1}  # node_exporter's state_id: 1 down, 4 active
_LOADED_HELP = "1 when the report file was read, validated and is fresh enough to act on"
_READY_HELP = "1 once the exporter has read its files and serves their series; 0 while it starts (none yet)"


@dataclass(frozen=True)
class CounterMetric:
    """How one canonical counter is exported: total and rate names, and the factor to base units."""

    total: str
    rate: str
    scale: float
    help: str


def counter_metric(canonical: str) -> CounterMetric:
    """The metric names of a canonical counter (node_exporter's where the quantity is the same)."""
    suffix = NODE_EXPORTER_NAMES.get(canonical)
    if suffix is not None:
        stem = f"fabricdoc_infiniband_{suffix.removesuffix('_total')}"
        return CounterMetric(f"{stem}_total", f"{stem}_per_second", 1.0,
                             f"{canonical} (node_exporter's node_infiniband_{suffix})")
    if canonical.endswith("_us"):  # microseconds: Prometheus wants seconds
        stem = f"fabricdoc_port_{canonical.removesuffix('_us')}_seconds"
        return CounterMetric(f"{stem}_total", f"fabricdoc_port_{canonical.removesuffix('_us')}_per_second",
                             1e-6, f"{canonical} in seconds")
    return CounterMetric(f"fabricdoc_port_{canonical}_total", f"fabricdoc_port_{canonical}_per_second", 1.0, canonical)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: an atomic rewrite gives a new inode even within one mtime tick."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


# -- what the history and the report say about ports ------------------------------------------
PortKey = tuple[str, int]  # (fabric node id, port number)


@dataclass
class HistoryPort:
    """One port's newest sample in the history: labels, totals and rates by canonical counter."""

    device: str
    guid: str
    peer: str
    totals: dict[str, float] = field(default_factory=dict)  # canonical units (bytes, not words)
    gauges: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)  # per second, between the last two samples
    alarm: bool = False  # an error or link-down counter moved between the last two samples


@dataclass
class HistoryView:
    """What the exporter keeps of a history store between reads."""

    ports: dict[PortKey, HistoryPort]
    sweeps: int
    newest: float | None  # epoch seconds of the newest sample


def read_history(path: Path) -> HistoryView:
    """The newest sample and latest rates of every port in the store (FabricdocError when unusable).

    Only each port's newest two samples are read (the store picks them in SQL), and
    their deltas are computed together (:func:`fabricdoc.model.counters.deltas`).
    """
    from fabricdoc.report.history import History  # pandas: loaded off the serving path

    with History(path, create=False) as h:
        try:
            samples = h.newest_samples(2)
            sweeps = h.sweep_count()
        except Exception as exc:  # sqlite3 errors from a damaged or foreign file
            raise FabricdocError(f"{path}: cannot read the history store: {exc}") from None
    ports: dict[PortKey, HistoryPort] = {}
    newest: float | None = None
    before, after = [], []
    for facts, pcs in samples:
        pc = pcs[-1]
        key = (pc.node, int(pc.port))
        hp = ports.get(key)
        if hp is None:
            hp = ports[key] = HistoryPort(str(facts.get("label") or pc.node), str(facts.get("guid") or ""),
                                          str(facts.get("peer") or ""))
        totals, gauges = counter_totals(pc.values)
        hp.totals.update(totals)
        hp.gauges.update(gauges)
        newest = pc.timestamp if newest is None else max(newest, pc.timestamp)
        if len(pcs) > 1 and pcs[-1].timestamp > pcs[-2].timestamp:
            before.append(pcs[-2])
            after.append(pc)
    for d in deltas(before, after):
        hp = ports[(d.port.node, int(d.port.port))]
        if d.per_second is not None and d.per_second == d.per_second:  # NaN when the interval was 0
            hp.rates[d.name] = float(d.per_second)
        if d.value and canonical_class(d.name) in _ALARM_CLASSES:
            hp.alarm = True
    return HistoryView(ports, sweeps, newest)


@dataclass(frozen=True)
class TopologyPort:
    """One cabled port as the report's topology describes its link."""

    device: str
    guid: str
    peer: str
    state: str
    lanes: int
    lane_gbps: float
    max_lanes: int
    max_lane_gbps: float

    @property
    def degraded(self) -> bool:
        return self.state != "down" and (self.lanes < self.max_lanes or self.lane_gbps < self.max_lane_gbps)


def topology_ports(rep: Report) -> dict[PortKey, TopologyPort]:
    """Both ends of every link in the report's topology (empty without one)."""
    topo = rep.topology or {}
    nodes = {n["id"]: n for n in topo.get("nodes", [])}
    out: dict[PortKey, TopologyPort] = {}
    for lk in topo.get("links", []):
        ends = ((lk["a"][0], int(lk["a"][1])), (lk["b"][0], int(lk["b"][1])))
        lanes, gbps = int(lk["lanes"]), float(lk["lane_gbps"])
        max_lanes, max_gbps = int(lk.get("max_lanes") or lanes), float(lk.get("max_lane_gbps") or gbps)
        for (nid, port), (oid, oport) in (ends, ends[::-1]):
            node, other = nodes.get(nid, {}), nodes.get(oid, {})
            out[(nid, port)] = TopologyPort(
                str(node.get("label") or nid), str(node.get("guid") or ""), f"{other.get('label') or oid}[{oport}]",
                str(lk.get("state", "up")), lanes, gbps, max_lanes, max_gbps)
    return out


def finding_ports(f: Finding, by_node: dict[str, list[PortKey]]) -> list[PortKey]:
    """The ports a finding names: a cable's two ends, a port, or every cabled port of a node it names."""
    if f.endpoints and len(f.endpoints) == len(f.node_ids):
        ends = list(zip(f.node_ids, (int(p) for _, p in f.endpoints), strict=True))
        return ends[:1] if f.kind == "port" else ends
    if f.endpoints and f.kind == "port" and f.node_ids:
        return [(f.node_ids[0], int(f.endpoints[0][1]))]
    return [pk for nid in f.node_ids for pk in by_node.get(nid, [])]


# -- the collector ---------------------------------------------------------------------
@dataclass
class _ReportState:
    read: bool = False  # whether the file was looked at yet
    stamp: tuple[int, int, int] | None = None
    report: Report | None = None  # the last file read that validated (fresh or not)
    error: str | None = None  # why the file could not be read
    stale: str | None = None  # why a valid report may not be acted on
    load_errors: int = 0


class FabricCollector:
    """The metrics of a report path and/or a history store, rebuilt when either changes.

    :meth:`refresh` re-reads what changed and renders the exposition;
    :meth:`exposition` returns the current bytes (cheap: what a scrape does).
    :meth:`start` runs refresh on a watcher thread every ``poll_s`` seconds.
    ``log`` gets one line whenever the report's or the history's state changes.
    """

    def __init__(
        self,
        report_path: str | Path | None = None,
        history_path: str | Path | None = None,
        *,
        all_ports: bool = False,
        max_age_h: float | None = DEFAULT_MAX_AGE_H,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if report_path is None and history_path is None:
            raise FabricdocError("exporter: give a report file, a history file, or both")
        self.report_path = Path(report_path) if report_path is not None else None
        self.history_path = Path(history_path) if history_path is not None else None
        self.all_ports = all_ports
        self.max_age_h = max_age_h or None
        self._log = log or (lambda line: None)
        self._lock = threading.Lock()
        self._rep = _ReportState()
        self._hist_read = False
        self._hist_stamp: tuple[int, int, int] | None = None
        self._hist: HistoryView | None = None
        self._hist_error: str | None = None
        self._built = False
        self._ready = threading.Event()  # set once the first build (or its failure) is served
        self._refresh_s = 0.0
        self._ports_exported = 0
        self._refresh_errors = 0
        self.series = 0
        self._body: tuple[bytes, bytes] = self._encode(self._starting())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- reading ----------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """Whether the first read of the files has been rendered (before it, scrapes get :meth:`_starting`)."""
        return self._ready.is_set()

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Block until the first build is served (or ``timeout_s`` passes); whether it is."""
        return self._ready.wait(timeout_s)

    @property
    def report_loaded(self) -> bool:
        """Whether a report is being served: read, valid, and fresh enough to act on."""
        return self._rep.report is not None and self._rep.error is None and self._rep.stale is None

    def _read_report(self) -> bool:
        """Re-read the report when its file changed, re-judge its age every time; True when either changed."""
        assert self.report_path is not None
        st = self._rep
        before = (st.error, st.stale)
        stamp = _stamp(self.report_path)
        changed = not st.read or stamp != st.stamp
        if changed:
            st.read, st.stamp = True, stamp
            try:
                st.report, st.error = Report.load(self.report_path), None
            except FabricdocError as exc:
                # Nothing from an unreadable file, and nothing from the one before it either.
                st.report, st.error = None, str(exc)
                st.load_errors += 1
        st.stale = staleness(st.report.generated_at, self.max_age_h) if st.report is not None else None
        if (st.error, st.stale) != before or changed:
            why = st.error or st.stale
            self._log(f"{self.report_path}: refused: {why}" if why else f"{self.report_path}: loaded")
        return changed or (st.error, st.stale) != before

    def _read_history(self) -> bool:
        assert self.history_path is not None
        stamp = _stamp(self.history_path)
        if self._hist_read and stamp == self._hist_stamp:
            return False
        self._hist_read, self._hist_stamp = True, stamp
        before = self._hist_error
        try:
            self._hist, self._hist_error = read_history(self.history_path), None
        except FabricdocError as exc:
            self._hist, self._hist_error = None, str(exc)
        if self._hist_error != before:
            self._log(f"history unreadable: {self._hist_error}" if self._hist_error else f"{self.history_path}: loaded")
        return True

    def refresh(self) -> bool:
        """Re-read changed files and re-render when anything changed; True when the exposition changed.

        Never raises: an unexpected failure (a bug, or a report the schema let through that
        rendering cannot take) is logged and counted, and the exposition then holds no
        series from any report until the files change again.
        """
        with self._lock:
            try:
                return self._refresh()
            except Exception as exc:  # a scrape target must outlive any one bad read
                self._refresh_errors += 1
                self._log(f"refresh failed: {type(exc).__name__}: {exc}")
                self._body = self._encode(self._fallback())
                self._built = True
                self._ready.set()
                return True

    def _refresh(self) -> bool:
        t0 = time.perf_counter()
        changed = not self._built
        if self.report_path is not None:
            changed |= self._read_report()
        if self.history_path is not None:
            changed |= self._read_history()
        if not changed:
            return False
        text, self.series = self._render()
        self._refresh_s = time.perf_counter() - t0
        self._body = self._encode(text + self._own_metrics())
        self._built = True
        self._ready.set()
        return True

    @staticmethod
    def _encode(text: str) -> tuple[bytes, bytes]:
        plain = text.encode("utf-8", "replace")  # a lone surrogate from JSON must not stop the exporter
        return plain, gzip.compress(plain, compresslevel=1)

    def _starting(self) -> str:
        """What a scrape gets before the first build: who we are and ``exporter_ready 0``, a valid exposition
        with no report or history series yet (a large history takes seconds to read)."""
        from fabricdoc import __version__

        out = Exposition()
        out.gauge("fabricdoc_build_info", "fabricdoc's version; always 1", 1.0, version=__version__)
        out.gauge("fabricdoc_exporter_ready", _READY_HELP, 0.0)
        self.series = out.series
        return out.text()

    def _fallback(self) -> str:
        """What is served after an unexpected failure: who we are, that no report is served, the error count."""
        from fabricdoc import __version__

        out = Exposition()
        out.gauge("fabricdoc_build_info", "fabricdoc's version; always 1", 1.0, version=__version__)
        out.gauge("fabricdoc_exporter_ready", _READY_HELP, 1.0)
        if self.report_path is not None:
            out.gauge("fabricdoc_report_loaded", _LOADED_HELP, 0.0)
        out.family("fabricdoc_exporter_refresh_errors_total", "counter", "Refreshes that failed unexpectedly",
                   [("", float(self._refresh_errors))])
        self.series = out.series
        return out.text()

    def exposition(self, gzipped: bool = False) -> bytes:
        """The current exposition text (what a scrape gets); ``exporter_ready 0`` before the first build."""
        return self._body[1 if gzipped else 0]

    # -- the watcher ----------------------------------------------------------------------
    def start(self, poll_s: float = POLL_S) -> None:
        """Refresh on a daemon thread (the first build at once, if not done yet), then every ``poll_s``
        seconds until :meth:`stop`."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, args=(poll_s,), name="fabricdoc-exporter-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def _watch(self, poll_s: float) -> None:
        if not self._built:
            self.refresh()
        while not self._stop.wait(poll_s):
            self.refresh()

    # -- rendering ----------------------------------------------------------------------
    def _render(self) -> tuple[str, int]:
        out = Exposition()
        from fabricdoc import __version__

        out.gauge("fabricdoc_build_info", "fabricdoc's version; always 1", 1.0, version=__version__)
        rep = self._rep.report if self.report_loaded else None
        if self.report_path is not None:
            self._report_status(out)
        if rep is not None:
            _report_metrics(out, rep)
        if self.history_path is not None:
            out.gauge("fabricdoc_history_loaded", "1 when the history store could be read", float(self._hist is not None))
            if self._hist is not None:
                out.gauge("fabricdoc_history_sweeps", "Sweeps stored in the history", float(self._hist.sweeps))
                if self._hist.newest is not None:
                    out.gauge("fabricdoc_history_timestamp_seconds", "Time of the history's newest counter sample",
                              self._hist.newest)
        self._ports_exported = _port_metrics(out, rep, self._hist, self.all_ports)
        return out.text(), out.series

    def _report_status(self, out: Exposition) -> None:
        st = self._rep
        out.gauge("fabricdoc_report_loaded", _LOADED_HELP, float(self.report_loaded))
        out.gauge("fabricdoc_report_stale", "1 when the report is valid but too old, dated in the future or undated",
                  float(st.report is not None and st.stale is not None))
        out.family("fabricdoc_report_load_errors_total", "counter", "Times the report file could not be read or validated",
                   [("", float(st.load_errors))])
        if st.report is None:
            return
        with contextlib.suppress(FabricdocError):  # undated: the stale gauge already says so
            out.gauge("fabricdoc_report_timestamp_seconds", "When the report was generated (epoch seconds)",
                      epoch(st.report.generated_at, "report time"))
        out.gauge("fabricdoc_report_info", "The report's producer and run id; always 1", 1.0,
                  producer=st.report.producer, run_id=st.report.run_id)

    def _own_metrics(self) -> str:
        out = Exposition()
        out.gauge("fabricdoc_exporter_ready", _READY_HELP, 1.0)
        out.gauge("fabricdoc_exporter_ports_exported", "Ports with per-port series (all of them with --all-ports)",
                  float(self._ports_exported))
        out.gauge("fabricdoc_exporter_refresh_duration_seconds", "Time to read the files and render this exposition",
                  self._refresh_s)
        out.family("fabricdoc_exporter_refresh_errors_total", "counter", "Refreshes that failed unexpectedly",
                   [("", float(self._refresh_errors))])
        self.series += out.series
        return out.text()


def _report_metrics(out: Exposition, rep: Report) -> None:
    """The verdict, findings, drain list, tests and predicted busbw of a loaded, fresh report."""
    out.family("fabricdoc_verdict", "gauge", "The last sweep's verdict: 1 for the current one",
               [(labels(verdict=v), float(rep.verdict == v)) for v in VERDICTS])
    counts: dict[tuple[str, str], int] = {}
    for f in rep.findings:
        counts[(str(f.severity), f.kind)] = counts.get((str(f.severity), f.kind), 0) + 1
    combos = [(s, k) for s in SEVERITIES for k in get_args(FindingKind)]
    combos += sorted(set(counts) - set(combos))
    out.family("fabricdoc_findings", "gauge", "Findings in the report by severity and kind (sum() is their number)",
               [(labels(severity=s, kind=k), float(counts.get((s, k), 0))) for s, k in combos])
    out.family("fabricdoc_finding", "gauge", "One finding of the report; the value is its confidence (0..1)",
               [(labels(id=f.id, key=f.key, kind=f.kind, component=f.component, fault=f.fault, severity=str(f.severity)),
                 float(f.confidence)) for f in rep.findings])
    out.family("fabricdoc_drain", "gauge", "Hosts the report says to drain (1 each)",
               [(labels(node=d.node), 1.0) for d in rep.drain])
    out.gauge("fabricdoc_drain_nodes", "Number of hosts the report says to drain", float(len(rep.drain)))
    tests = {k: v for k, v in rep.tests.items() if isinstance(v, int | float)}
    if "pairs_tested" in tests:
        bad = {s: float(tests.get(f"pairs_{s}", 0)) for s in PAIR_STATUSES[1:]}
        ok = max(float(tests["pairs_tested"]) - sum(bad.values()), 0.0)
        out.family("fabricdoc_pairs", "gauge", "Bandwidth tests of the sweep by outcome (they add up to the tests run)",
                   [(labels(status=s), v) for s, v in {"ok": ok, **bad}.items()])
    bw = (rep.impact or {}).get("allreduce_busbw_gbps") or {}
    out.family("fabricdoc_allreduce_busbw_bytes_per_second", "gauge", "Predicted AllReduce bus bandwidth",
               [(labels(basis=b), float(bw[b]) * 1e9 / 8) for b in BUSBW_KEYS
                if isinstance(bw.get(b), int | float)])
    links = (rep.topology or {}).get("links", [])
    if links:
        states = {"up": 0, "down": 0}
        degraded = 0
        for lk in links:
            state = str(lk.get("state", "up"))
            states[state] = states.get(state, 0) + 1
            degraded += state != "down" and (lk["lanes"] < (lk.get("max_lanes") or lk["lanes"])
                                             or lk["lane_gbps"] < (lk.get("max_lane_gbps") or lk["lane_gbps"]))
        out.family("fabricdoc_links", "gauge", "Links of the fabric by state",
                   [(labels(state=s), float(n)) for s, n in states.items()])
        out.gauge("fabricdoc_links_degraded", "Links up but trained below their supported width or speed",
                  float(degraded))


def _selected_ports(rep: Report | None, topo: dict[PortKey, TopologyPort], hist: HistoryView | None,
                    all_ports: bool) -> list[PortKey]:
    """The ports that get per-port series: every one, or those a finding, a counter or a link state flags."""
    hports = hist.ports if hist is not None else {}
    if all_ports:
        return sorted(set(topo) | set(hports))
    chosen = {pk for pk, hp in hports.items() if hp.alarm}
    chosen |= {pk for pk, tp in topo.items() if tp.state == "down" or tp.degraded}
    if rep is not None:
        by_node: dict[str, list[PortKey]] = {}
        for pk in set(topo) | set(hports):
            by_node.setdefault(pk[0], []).append(pk)
        for f in rep.findings:
            chosen.update(finding_ports(f, by_node))
    return sorted(chosen)


def _port_metrics(out: Exposition, rep: Report | None, hist: HistoryView | None, all_ports: bool) -> int:
    """Per-port state, width, rate and counter families; returns how many ports got series."""
    topo = topology_ports(rep) if rep is not None else {}
    hports = hist.ports if hist is not None else {}
    chosen = _selected_ports(rep, topo, hist, all_ports)
    lab: dict[PortKey, str] = {}
    for pk in chosen:
        src = topo.get(pk) or hports.get(pk)
        if src is not None:
            lab[pk] = labels(device=src.device, port=pk[1], guid=src.guid, peer=src.peer)
    tps = [(lab[pk], tp) for pk in chosen if pk in lab and (tp := topo.get(pk)) is not None]
    if tps:
        out.family("fabricdoc_infiniband_state_id", "gauge", "Link state of the port (node_exporter's codes: 1 down, 4 active)",
                   [(la, float(_IB_STATE_ID.get(tp.state, 0))) for la, tp in tps])
        out.family("fabricdoc_infiniband_rate_bytes_per_second", "gauge", "Trained signal rate of the port (0 when down)",
                   [(la, 0.0 if tp.state == "down" else tp.lanes * tp.lane_gbps * 1e9 / 8) for la, tp in tps])
        out.family("fabricdoc_port_width_lanes", "gauge", "Lanes the port's link trained to (4 for 4X)",
                   [(la, float(tp.lanes)) for la, tp in tps])
        out.family("fabricdoc_port_supported_width_lanes", "gauge", "Lanes the port's link supports",
                   [(la, float(tp.max_lanes)) for la, tp in tps])
        out.family("fabricdoc_port_supported_rate_bytes_per_second", "gauge", "Signal rate the port's link supports",
                   [(la, tp.max_lanes * tp.max_lane_gbps * 1e9 / 8) for la, tp in tps])
    totals: dict[str, list[tuple[str, float]]] = {}
    rates: dict[str, list[tuple[str, float]]] = {}
    gauges: dict[str, list[tuple[str, float]]] = {}
    for pk in chosen:
        hp = hports.get(pk)
        if hp is None:
            continue
        la = lab[pk]
        for canon, value in hp.totals.items():
            totals.setdefault(canon, []).append((la, value))
        for canon, value in hp.rates.items():
            rates.setdefault(canon, []).append((la, value))
        for canon, value in hp.gauges.items():
            gauges.setdefault(canon, []).append((la, value))
    for canon in sorted(totals):
        m = counter_metric(canon)
        out.family(m.total, "counter", f"{m.help}: newest sample in the history",
                   [(la, v * m.scale) for la, v in totals[canon]])
    for canon in sorted(rates):
        m = counter_metric(canon)
        out.family(m.rate, "gauge", f"{m.help}: per second between the port's last two samples",
                   [(la, v * m.scale) for la, v in rates[canon]])
    for canon in sorted(gauges):
        out.family(f"fabricdoc_port_{canon}", "gauge", f"{canon}: newest sample in the history", gauges[canon])
    return len(lab)
