"""Scrape time, series count and exposition size of ``fabricdoc exporter`` at 1,024 and 8,192 hosts.

Each size is a 3-level fat-tree (fat_tree_3(16): 1,024 hosts; fat_tree_3(32):
8,192 hosts) with injected faults (lossy, flapping, degraded, down, congested
cables), a report whose findings name the faulty cables, and a history store
holding two sweeps of simulated IBTA counter samples (before and after) of
every cabled port, as ``fabricdoc sweep --history`` stores them.

For the default exporter and for ``--all-ports`` it prints: the time from
start to the first answer (the server answers at once with
``fabricdoc_exporter_ready 0`` while the watcher thread builds), the time to
build the exposition (load the report, read the history's newest two samples
per port, render; from start until ready), the time of a steady-state scrape
over HTTP on 127.0.0.1 (median of several, the figure Prometheus sees), the
number of series and the exposition's size, plain and gzipped. Figures are
printed, never asserted.

    python benchmarks/bench_exporter.py [--sizes 16,32] [--faults 24] [--scrapes 7]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_3
from fabricdoc.model.evidence import CounterEvidence, StateEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations
from fabricdoc.model.topology import Fabric
from fabricdoc.report.history import History
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exporter import FabricCollector
from fabricdoc.scheduler.exposition import serve
from fabricdoc.sources.sim.simulator import Simulator, random_faults

KINDS = ("lossy", "flapping", "degraded", "down", "congested")
# What each injected fault looks like as a finding: fault name, severity, evidence.
_AS_FINDING = {
    "lossy": ("symbol_errors", "warning"),
    "flapping": ("flapping", "error"),
    "degraded": ("degraded", "warning"),
    "down": ("down", "error"),
    "congested": ("congested", "warning"),
}


def findings_for(fabric: Fabric, faults: list[Fault]) -> list[Finding]:
    """One link finding per injected fault, shaped as localization names them."""
    out = []
    for i, f in enumerate(faults, 1):
        key = f.link(fabric)
        a, b = key.a, key.b
        la, lb = fabric.label(a.node), fabric.label(b.node)
        fault, sev = _AS_FINDING[f.kind]
        if f.kind == "down":
            ev = [StateEvidence(node=la, port=a.port, state="Down", phys_state="Polling", source="iblinkinfo")]
        else:
            ev = [CounterEvidence(node=la, port=a.port, counter="symbol_errors", delta=10.0, per_second=1.0,
                                  interval_s=10.0, raw=("SymbolErrorCounter",))]
        out.append(Finding(f"F{i:03d}", "link", f"{la}[{a.port}] -- {lb}[{b.port}]", fault, sev, 0.9, ev,
                           [(la, a.port), (lb, b.port)], [a.node, b.node]))
    return out


def build_inputs(k: int, n_faults: int, tmp: Path, seed: int = 7) -> tuple[Path, Path, dict[str, int]]:
    """A report file and a two-sweep history store for fat_tree_3(k); returns their paths and sizes."""
    fabric = fat_tree_3(k)
    faults = random_faults(fabric, n_faults, np.random.default_rng(seed), kinds=KINDS)
    now = time.time()
    report_path, history_path = tmp / f"report-{k}.json", tmp / f"history-{k}.sqlite"
    ports = 0
    for n, start in enumerate((now - 3 * 3600.0, now - 600.0)):
        sim = Simulator(fabric, faults, seed=seed + n, start_time=start)
        before, after = sim.counters()
        ports = len(after)
        report = Report.build(sim.truth, findings_for(fabric, faults), Observations(before=before, after=after))
        report.generated_at = datetime.fromtimestamp(start + sim.interval_s, UTC).isoformat()
        with History(history_path) as h:
            h.append(report, before + after)
    report.save(report_path)
    return report_path, history_path, {"hosts": len(fabric.hosts()), "ports": ports, "findings": len(faults)}


def scrape(url: str, gz: bool = False) -> bytes:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gz else {})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return resp.read()


def series_count(text: bytes) -> int:
    return sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))


def measure(label: str, report: Path, history: Path, all_ports: bool, scrapes: int) -> None:
    collector = FabricCollector(report, history, all_ports=all_ports)
    t = time.perf_counter()
    server = serve(collector, "127.0.0.1", 0, build_first=False)  # as `fabricdoc exporter` starts
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    host, port = server.server_address[:2]
    url = f"http://{host}:{port}/metrics"
    try:
        first = scrape(url)
        first_s = time.perf_counter() - t
        collector.wait_ready()
        build_s = time.perf_counter() - t
        body = scrape(url)
        times, gz_times = [], []
        for _ in range(scrapes):
            t = time.perf_counter()
            scrape(url)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            gz_body = scrape(url, gz=True)
            gz_times.append(time.perf_counter() - t)
    finally:
        server.shutdown()
        server.server_close()
    ready = b"fabricdoc_exporter_ready 0" in first
    print(f"{label:<26} series {series_count(body):>9,}  size {len(body) / 1e6:8.2f} MB "
          f"(gzip {len(gz_body) / 1e6:6.2f} MB) | first answer {first_s * 1000:7.1f} ms "
          f"({'ready 0' if ready else 'built'}) | build {build_s:7.2f} s | "
          f"scrape {statistics.median(times) * 1000:8.1f} ms (gzip {statistics.median(gz_times) * 1000:8.1f} ms)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="16,32", help="fat_tree_3 radixes (16: 1,024 hosts; 32: 8,192 hosts)")
    ap.add_argument("--faults", type=int, default=24, help="faulty cables per fabric")
    ap.add_argument("--scrapes", type=int, default=7, help="timed scrapes per case (the median is printed)")
    ap.add_argument("--no-all-ports", action="store_true", help="skip the --all-ports case")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fdexp-bench-") as tmp:
        for k in (int(s) for s in args.sizes.split(",")):
            t = time.perf_counter()
            report, history, size = build_inputs(k, args.faults, Path(tmp))
            print(f"fat_tree_3({k}): {size['hosts']:,} hosts, {size['ports']:,} cabled ports, "
                  f"{size['findings']} findings; report {report.stat().st_size / 1e6:.1f} MB, "
                  f"history {history.stat().st_size / 1e6:.1f} MB (built in {time.perf_counter() - t:.1f} s)")
            measure(f"  {size['hosts']:,} hosts, default", report, history, False, args.scrapes)
            if not args.no_all_ports:
                measure(f"  {size['hosts']:,} hosts, --all-ports", report, history, True, args.scrapes)
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (input building included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
