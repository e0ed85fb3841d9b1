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

from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.host import (
    dcb,
    ethtool,
    hostconfig,
    kmsg,
    mlnx_qos,
    netlink,
    netstat,
    nvml,
    pcap,
    tc,
)
from fabricdoc.probes.host import sysfs as ibsysfs

from fabricdoc.model.records import (
    GpuHealth,
    HostCheck,
    KernelEvent,
    LinkEvent,
    PortCounters,
    PortState,
    ProbeRun,
)

Record = PortCounters | PortState | LinkEvent | ProbeRun | GpuHealth


SYSFS_PROBLEMS_LISTED = 50  # bad sysfs files listed one by one; the rest are counted


@dataclass
class HostBundle:
    """Records from one host plus JSON-able facts (watch window, pcap, qdisc kinds) in ``extra``.

    Probe health lives in ``health``; :attr:`all_records` puts its ProbeRuns after the data.
    """

    node: str
    records: list[Record] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    health: HealthRecorder = field(default_factory=HealthRecorder)
    kernel_events: list[KernelEvent] = field(default_factory=list)
    host_checks: list[HostCheck] = field(default_factory=list)

    @property
    def probes(self) -> list[ProbeRun]:
        return list(self.health.runs)

    @property
    def all_records(self) -> list[Record]:
        return [*self.records, *self.kernel_events, *self.host_checks, *self.health.runs]

    def of(self, cls: type) -> list:
        return [r for r in self.all_records if isinstance(r, cls)]



def _only_port(ports: dict[str, int]) -> tuple[int, str | None]:
    if len(ports) == 1:
        ifname, port = next(iter(ports.items()))
        return port, ifname
    return 0, None


def _sample(b: HostBundle, node: str, netns: str | None, port_of: dict[str, int] | None,
            use_ethtool: bool, ethtool_timeout_s: float) -> tuple[dict[str, int], dict[str, int]]:
    """One sample of netlink, tc, netstat and ethtool; returns the ifname -> port map used and
    each of those interfaces' MTU (from the same netlink dump)."""
    run = b.health.call
    where = node if netns is None else f"{node} (netns {netns})"
    facts = run("netlink", where, lambda: netlink.collect_links(netns)) or []
    ts = time.time()
    counters, states = netlink.parse_links(facts, node, port_of, ts)
    b.records += counters + states
    ports = {c.ifname: c.port for c in counters if c.ifname}
    mtus = {f["ifname"]: f["mtu"] for f in facts if f.get("ifname") in ports and isinstance(f.get("mtu"), int)}

    qdiscs = run("tc", where, lambda: tc.collect_qdiscs(netns))
    if qdiscs is not None:
        b.records += tc.parse_qdiscs(qdiscs, node, ports, ts)
        b.extra["qdiscs"] = tc.qdisc_kinds(q for q in qdiscs if q.get("ifname") in ports)

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
    return ports, mtus


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
    kmsg_file: str | Path | None = None,
    use_kmsg: bool = True,
    check_config: bool = True,
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
    run = bundle.health.call
    ports, mtus = _sample(bundle, node, netns, port_of, use_ethtool, ethtool_timeout_s)
    config_root = sysfs_root if sysfs_root is not None else "/"
    # The kernel log and sysfs belong to the whole machine, not to one network namespace in it.
    if check_config and netns is None:
        checks = run("hostconfig", f"{node}:{config_root}", lambda: hostconfig.check_host(config_root, node))
        if checks is not None:
            bundle.host_checks = checks
    if check_config and port_of:
        # The fabric's own data interfaces (named by --if-port), in any namespace; RDMA netdevs
        # were checked above from sysfs. Unnamed interfaces (management, docker) are not compared.
        seen = {c.subject for c in bundle.host_checks if c.check == "mtu"}
        bundle.host_checks += hostconfig.mtu_checks(node, {i: m for i, m in mtus.items() if i not in seen}, ports)
    if check_config:
        # PFC of the RoCE interfaces: the fabric's data ports and, on the machine itself, RDMA Ethernet netdevs.
        roce = set(ports) if port_of else set()
        if netns is None:
            roce |= set(hostconfig.roce_netdevs(config_root))
        for ifname in sorted(roce):
            bundle.host_checks.append(dcb.pfc_check(node, ifname, ports.get(ifname), netns))
            bundle.host_checks.append(mlnx_qos.qos_check(node, ifname, ports.get(ifname), netns))
    if (use_kmsg and netns is None) or kmsg_file is not None:
        _kernel_log(bundle, node, kmsg_file, config_root, ports)

    if sysfs_root is not None:
        raw = run("sysfs", f"{node}:{sysfs_root}", lambda: ibsysfs.read_tree(sysfs_root))
        if raw is not None:
            if not raw.get("present"):
                bundle.health.fail("sysfs", f"{node}:{sysfs_root}", f"sysfs: no {ibsysfs.SYSFS_IB} under {sysfs_root}",
                                   "unsupported")
            else:
                counters, states, problems = ibsysfs.parse_tree(raw, node)
                bundle.records += counters + states
                # Each bad file is listed on its own (its port's other values and every other port are kept).
                for problem in problems[:SYSFS_PROBLEMS_LISTED]:
                    bundle.health.fail("sysfs", f"{node}:{sysfs_root}", f"sysfs: {problem}")
                if len(problems) > SYSFS_PROBLEMS_LISTED:
                    bundle.health.fail("sysfs", f"{node}:{sysfs_root}",
                                       f"sysfs: {len(problems) - SYSFS_PROBLEMS_LISTED} more files could not be read")

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
            bundle.extra["watch"] = {"start": start, "end": end}
        _sample(bundle, node, netns, port_of, use_ethtool, ethtool_timeout_s)

    if pcap_file is not None:
        summary = run("pcap", str(pcap_file), lambda: pcap.summarize_pcap(pcap_file, link_gbps))
        if summary is not None:
            port, ifname = _only_port(ports)
            bundle.records.append(pcap.pcap_counters(summary, node, port, ifname))
            bundle.extra["pcap"] = summary.to_dict()
            if summary.error:
                bundle.health.fail("pcap", str(pcap_file), f"pcap: {pcap_file}: {summary.error}")
    return bundle


def _kernel_log(bundle: HostBundle, node: str, kmsg_file: str | Path | None, root: str | Path,
                ports: dict[str, int]) -> None:
    """Kernel messages (a file, else journalctl/dmesg) as KernelEvents; link events also as LinkEvents."""
    def read() -> list[KernelEvent]:
        if kmsg_file is not None:
            from fabricdoc.model.inputs import read_text

            text, source = read_text(str(kmsg_file), "kernel log"), str(kmsg_file)
        else:
            text, source = kmsg.collect_kmsg()
        events = kmsg.parse_kmsg(text, node, source, boot_time=None if kmsg_file else kmsg.boot_time(root))
        return kmsg.map_ports(events, ports, hostconfig.pci_ifnames(root))

    events = bundle.health.call("kmsg", str(kmsg_file or node), read)
    if events is not None:
        bundle.kernel_events = events
        bundle.records += kmsg.link_events(events)
