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

Port counters and link states take node_exporter's infiniband collector names:
:mod:`fabricdoc.scheduler.exporter_metrics` tabulates them and renders the port and
report families, :mod:`fabricdoc.scheduler.exporter_history` reads each port's newest
sample and rates from the history store; this module serves, reloads and judges freshness.

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
from dataclasses import dataclass
from pathlib import Path

from fabricdoc.errors import FabricdocError
from fabricdoc.model.times import epoch
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exporter_history import HistoryView, read_history
from fabricdoc.scheduler.exporter_metrics import port_metrics, report_metrics
from fabricdoc.scheduler.exposition import POLL_S, Exposition
from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H, staleness

_LOADED_HELP = "1 when the report file was read, validated and is fresh enough to act on"
_READY_HELP = "1 once the exporter has read its files and serves their series; 0 while it starts (none yet)"


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What tells a changed file: an atomic rewrite gives a new inode even within one mtime tick."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


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
            report_metrics(out, rep)
        if self.history_path is not None:
            out.gauge("fabricdoc_history_loaded", "1 when the history store could be read", float(self._hist is not None))
            if self._hist is not None:
                out.gauge("fabricdoc_history_sweeps", "Sweeps stored in the history", float(self._hist.sweeps))
                if self._hist.newest is not None:
                    out.gauge("fabricdoc_history_timestamp_seconds", "Time of the history's newest counter sample",
                              self._hist.newest)
        self._ports_exported = port_metrics(out, rep, self._hist, self.all_ports)
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
