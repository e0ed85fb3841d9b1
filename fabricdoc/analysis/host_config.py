"""Host-side findings: host configuration that masquerades as a fabric fault, and NIC kernel errors.

A failed :class:`HostCheck` is a ``host_config`` finding on that host (kind ``host``), with the reason;
a NIC trained below its PCIe width/speed is ``pcie_degraded`` on that NIC (kind ``nic``). Values that
must agree across hosts (MTU, the RoCE v2 IPv4 GID index, traffic class) are compared with the
majority; a host that differs is a ``host_config`` finding. Kernel AER, thermal, firmware
command-timeout and health messages become evidence on the NIC they name. None of these is ever a
cable fault. An ``unknown`` check is never a fault; the report's coverage lists it as not seen.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from fabricdoc.model.evidence import HostEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import HostCheck, KernelEvent
from fabricdoc.model.severity import Severity

FAULT = "host_config"
# Values compared across hosts: (check, value key, what a person reads).
CONSISTENT = (("mtu", "mtu", "MTU"), ("roce_gid", "v2_ipv4", "RoCE v2 IPv4 GID index"),
              ("traffic_class", "traffic_class", "traffic class"), ("pfc", "pfc_prios", "PFC priorities"),
              ("qos_trust", "trust", "QoS trust state"), ("qos_trust", "dscp_map", "DSCP-to-priority map"))
# Kernel event kinds that are NIC faults: (fault, severity); link and module events go to the flap analysis.
KERNEL_FAULTS = {"aer": ("pcie_errors", Severity.WARNING), "thermal": ("nic_thermal", Severity.ERROR),
                 "cmd_timeout": ("nic_firmware", Severity.ERROR), "health": ("nic_firmware", Severity.ERROR)}


def _host_finding(node: str, evidence: list[HostEvidence]) -> Finding:
    return Finding("", "host", node, FAULT, Severity.ERROR, 0.9, list(evidence), None, [node])


def host_config_findings(checks: Iterable[HostCheck]) -> list[Finding]:
    """Findings from every host's checks; one ``host_config`` finding per host with all its reasons."""
    checks = list(checks)
    per_host: dict[str, list[HostEvidence]] = defaultdict(list)
    out: list[Finding] = []
    for c in checks:
        if c.status != "fail":
            continue
        ev = HostEvidence(c.check, c.subject, c.reason, "sysfs")
        if c.check == "pcie_link":
            out.append(Finding("", "nic", f"{c.node} {c.subject}", "pcie_degraded", Severity.ERROR, 0.9, [ev],
                               None, [c.node], component=f"{c.node}/{c.subject.split(' ')[0]}"))
        else:
            per_host[c.node].append(ev)
    for check, key, what in CONSISTENT:
        groups: dict[object, list[tuple[HostCheck, object]]] = defaultdict(list)
        for c in checks:
            if c.check == check and c.status == "ok" and c.values.get(key) is not None:
                groups[_peer_group(c)].append((c, c.values[key]))
        for seen in groups.values():
            counts = Counter(v for _, v in seen)
            if len(counts) < 2:
                continue
            (common, n), = counts.most_common(1)
            for c, v in seen:
                if v != common:
                    per_host[c.node].append(HostEvidence(check, c.subject,
                                                         f"{what} {v} while {n} of {len(seen)} read {common}", "sysfs"))
    out += [_host_finding(node, evs) for node, evs in sorted(per_host.items())]
    return out


def _peer_group(c: HostCheck) -> object:
    """Which checks on other hosts one is compared with: an MTU or PFC setting with the same fabric
    port's (or, with no port, the same interface name's: an IPoIB netdev and a RoCE one rightly
    differ); GID index and traffic class over every RDMA port, as they must agree fabric-wide."""
    if c.check in ("mtu", "pfc", "qos_trust"):
        return ("port", c.port) if c.port is not None else ("ifname", c.subject)
    return None


def kernel_findings(events: Iterable[KernelEvent]) -> list[Finding]:
    """One NIC finding per (host, PCI device, fault) from AER, thermal, command-timeout and health messages."""
    groups: dict[tuple[str, str, str], list[KernelEvent]] = defaultdict(list)
    for e in events:
        if e.kind in KERNEL_FAULTS and e.device:
            groups[(e.node, e.device, KERNEL_FAULTS[e.kind][0])].append(e)
    out = []
    for (node, device, fault), evs in sorted(groups.items()):
        severity = max((KERNEL_FAULTS[e.kind][1] for e in evs), key=lambda s: s.rank)
        if fault == "pcie_errors" and any(e.state in ("uncorrected", "fatal") for e in evs):
            severity = Severity.ERROR
        times = [e.timestamp for e in evs if e.timestamp is not None]
        ifname = next((e.ifname for e in evs if e.ifname), None)
        port = next((e.port for e in evs if e.port is not None), None)
        name = f"{node} {ifname or device}"
        ev = HostEvidence(evs[0].kind, device, evs[-1].message[:200], "kmsg", len(evs),
                          min(times) if times else None, max(times) if times else None)
        out.append(Finding("", "nic", name, fault, severity, 0.8, [ev],
                           [(node, port)] if port is not None else None, [node],
                           component=f"{node}/{device}"))
    return out

