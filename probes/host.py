"""Collect every host-side probe for this host (or one network namespace) into one bundle of records.

The bundle is what ``fabricdoc probe`` prints and a launcher gathers from each
node: PortCounters (vendor names as keys, ``ifname`` set), PortStates,
LinkEvents, GpuHealth and one ProbeRun per probe (status, duration, one-line
error). A probe that fails is recorded and the others still run; nothing here
analyses. With ``watch_s`` the counters are sampled before and after a link
watch, so deltas and flaps come from the same window.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricdoc.probes import ethtool, ibsysfs, netlink, netstat, nvml, pcap, tcstats

from fabricdoc.errors import FabricdocError
from fabricdoc.model import GpuHealth, LinkEvent, PortCounters, PortState, ProbeRun

Record = PortCounters | PortState | LinkEvent | ProbeRun | GpuHealth


@dataclass
class HostBundle:
    """Records from one host plus JSON-able summaries (flaps, pcap, qdisc kinds) in ``extra``."""

    node: str
    records: list[Record] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def probes(self) -> list[ProbeRun]:
        return [r for r in self.records if isinstance(r, ProbeRun)]

    def of(self, cls: type) -> list:
        return [r for r in self.records if isinstance(r, cls)]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class _Runner:
    """Runs one probe, records a ProbeRun, and never lets an expected failure escape."""

    def __init__(self, bundle: HostBundle) -> None:
        self.bundle = bundle

    def __call__(self, probe: str, target: str, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        try:
            result = fn()
        except FabricdocError as exc:
            status = getattr(exc, "status", "error")
            self._record(probe, target, status, t0, _one_line(exc))
            return None
        except OSError as exc:
            self._record(probe, target, "error", t0, f"{probe}: {_one_line(exc)}")
            return None
        self._record(probe, target, "ok", t0, None)
        return result

    def _record(self, probe: str, target: str, status: str, t0: float, error: str | None) -> None:
        self.bundle.records.append(ProbeRun(probe, target, status,  # type: ignore[arg-type]
                                            round(time.monotonic() - t0, 6), error))

    def fail_last(self, error: str, status: str = "error") -> None:
        """Mark the latest ProbeRun as failed after the fact (its records are still kept)."""
        recs = self.bundle.records
        i = max(i for i, r in enumerate(recs) if isinstance(r, ProbeRun))
        last = recs[i]
        recs[i] = ProbeRun(last.probe, last.target, status,  # type: ignore[arg-type]
                           last.duration_s, error)


def _only_port(ports: dict[str, int]) -> tuple[int, str | None]:
    if len(ports) == 1:
        ifname, port = next(iter(ports.items()))
        return port, ifname
    return 0, None


def _sample(run: _Runner, node: str, netns: str | None, port_of: dict[str, int] | None,
            use_ethtool: bool, ethtool_timeout_s: float) -> dict[str, int]:
    """One sample of netlink, tc, netstat and ethtool; returns the ifname -> port map used."""
    b = run.bundle
    where = node if netns is None else f"{node} (netns {netns})"
    facts = run("netlink", where, lambda: netlink.collect_links(netns)) or []
    ts = time.time()
    counters, states = netlink.parse_links(facts, node, port_of, ts)
    b.records += counters + states
    ports = {c.ifname: c.port for c in counters if c.ifname}

    qdiscs = run("tc", where, lambda: tcstats.collect_qdiscs(netns))
    if qdiscs is not None:
        b.records += tcstats.parse_qdiscs(qdiscs, node, ports, ts)
        b.extra["qdiscs"] = tcstats.qdisc_kinds(q for q in qdiscs if q.get("ifname") in ports)

    parsed = run("netstat", where, lambda: netstat.parse_netstat(netstat.collect_netstat(netns)))
    if parsed is not None:
        # Namespace-wide counts: on the single data port when there is one, else port 0.
        port, ifname = _only_port(ports)
        b.records.append(PortCounters(node, port, ts, netstat.ecn_counts(parsed),
                                      source="netstat", ifname=ifname))
    if use_ethtool:
        for ifname, port in ports.items():
            got = run("ethtool", f"{node}:{ifname}",
                      lambda ifname=ifname: ethtool.collect_ethtool(ifname, netns, ethtool_timeout_s))
            if got is not None:
                stats, _method = got
                b.records.append(ethtool.ethtool_counters(stats, node, port, ifname, time.time()))
    return ports


def collect_host(
    node: str | None = None,
    netns: str | None = None,
    sysfs_root: str | Path | None = "/",
    watch_s: float = 0.0,
    pcap_file: str | Path | None = None,
    link_gbps: float | None = None,
    port_of: dict[str, int] | None = None,
    gpus: bool = True,
    nvml_module: Any = None,
    use_ethtool: bool = True,
    ethtool_timeout_s: float = 5.0,
    on_watch_ready: Callable[[], None] | None = None,
) -> HostBundle:
    """Everything the host probes can see, as records.

    ``node`` defaults to the netns name or the hostname; ``port_of`` maps
    interface names to the fabric's port numbers (default: ifindex). With
    ``watch_s`` > 0 the link watcher runs for that long between two samples;
    ``on_watch_ready`` is called once it listens. ``pcap_file`` adds the
    capture's PFC/ECN/CNP counts; ``sysfs_root`` None skips the RDMA sysfs probe.
    """
    node = node or netns or socket.gethostname()
    bundle = HostBundle(node)
    run = _Runner(bundle)
    ports = _sample(run, node, netns, port_of, use_ethtool, ethtool_timeout_s)

    if sysfs_root is not None:
        raw = run("sysfs", f"{node}:{sysfs_root}", lambda: ibsysfs.read_tree(sysfs_root))
        if raw is not None:
            if not raw.get("present"):
                run.fail_last(f"sysfs: no {ibsysfs.SYSFS_IB} under {sysfs_root}", "unsupported")
            else:
                counters, states, problems = ibsysfs.parse_tree(raw, node)
                bundle.records += counters + states
                if problems:
                    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
                    run.fail_last(f"sysfs: {problems[0]}{more}")

    if gpus:
        found = run("nvml", node, lambda: nvml.collect_gpus(
            node, nvml_module, xid_wait_s=0.0, sysfs_root=sysfs_root))
        if found is not None:
            bundle.records += found

    if watch_s > 0:
        def watch() -> tuple[list[LinkEvent], float, float]:
            watcher = netlink.LinkWatcher(netns, watch_s).start()
            start = time.time()
            if on_watch_ready is not None:
                on_watch_ready()
            facts = watcher.wait()
            return netlink.parse_link_events(facts, node, port_of), start, time.time()

        watched = run("netlink-watch", node, watch)
        if watched is not None:
            events, start, end = watched
            bundle.records += events
            bundle.extra["flaps"] = {
                f"{n}[{p}]": s for (n, p), s in netlink.summarize_flaps(events, start, end).items()
            }
        _sample(run, node, netns, port_of, use_ethtool, ethtool_timeout_s)

    if pcap_file is not None:
        summary = run("pcap", str(pcap_file), lambda: pcap.summarize_pcap(pcap_file, link_gbps))
        if summary is not None:
            port, ifname = _only_port(ports)
            bundle.records.append(pcap.pcap_counters(summary, node, port, ifname))
            bundle.extra["pcap"] = summary.to_dict()
            if summary.error:
                run.fail_last(f"pcap: {pcap_file}: {summary.error}")
    return bundle
