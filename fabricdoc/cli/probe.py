"""``fabricdoc probe``: collect this host's records (netlink, tc, ethtool, RDMA sysfs, NVML, pcap).

Prints one JSON document a launcher can gather from every node (``--json``),
or a short text summary. ``fabricdoc analyze`` reads the gathered documents.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.errors import ConfigError
from fabricdoc.model.verdict import EXIT_CANNOT_RUN, EXIT_OK

DESCRIPTION = """Collect the host-side view of the fabric on this node: interface stats,
operstate and carrier flaps (netlink), qdisc drops/overlimits/backlog (tc), ECN CE
received (netstat IpExt), NIC counters (ethtool -S: PFC pause, pause storms, PHY
errors), RDMA port counters and hw_counters (/sys/class/infiniband), GPU health
(NVML), and optionally a packet capture's PFC/ECN/CNP counts. Every probe's
status is recorded; a probe that cannot run is reported, the others still run.
Nothing is analysed here: gather every node's --json output and run
'fabricdoc analyze' on it."""

EPILOG = """examples:
  fabricdoc probe --json > $(hostname).json          # one node, for a launcher to gather
  fabricdoc probe --netns red --watch 30 --json      # a namespace, watching flaps for 30 s
  fabricdoc probe --pcap roce.pcap --link-gbps 200   # add a capture's PFC and ECN counts
  fabricdoc probe --if-port eth0=1 --if-port eth1=2  # the fabric's port numbers for two NICs

exit codes:
  0  records were collected (probes that could not run are listed in them)
  2  no probe could run, or bad arguments: one line on stderr says why
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "probe", help="collect this host's counters, link state, flaps and GPU health as JSON records",
        description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_node(p)
    p.add_argument("--netns", metavar="NAME", help="probe inside this network namespace")
    p.add_argument("--sysfs-root", metavar="PATH", default="/",
                   help="root under which sys/class/infiniband is read (default: /)")
    p.add_argument("--no-sysfs", action="store_true", help="skip the RDMA sysfs probe")
    p.add_argument("--watch", metavar="SECONDS", type=float, default=0.0,
                   help="watch link up/down events this long, sampling counters before and after")
    p.add_argument("--pcap", metavar="FILE", help="count PFC frames, CE-marked RoCEv2 packets and CNPs in FILE")
    p.add_argument("--link-gbps", metavar="N", type=float,
                   help="link speed for turning pause quanta into time (512 bit times each)")
    p.add_argument("--if-port", metavar="IFNAME=N", action="append", default=[],
                   help="the fabric's port number for an interface (repeatable; default: ifindex, "
                        "and only the named interfaces are reported once any is given)")
    p.add_argument("--port", dest="if_port", action="append", help=a.HIDDEN)
    p.add_argument("--no-gpu", action="store_true", help="skip the NVML probe")
    p.add_argument("--no-ethtool", action="store_true", help="skip ethtool -S")
    p.add_argument("--kmsg", metavar="FILE",
                   help="read kernel messages from FILE (journalctl -k -o json or short-iso, dmesg --time-format "
                        "iso, dmesg -T) instead of this host's journal or dmesg")
    p.add_argument("--no-kmsg", action="store_true", help="skip the kernel log (NIC link, module, thermal, "
                   "command-timeout and PCIe AER messages)")
    p.add_argument("--no-hostconfig", action="store_true",
                   help="skip the host configuration checks (GPUDirect, PCIe ACS and link width, NUMA, GID, MTU)")
    a.add_json(p)
    a.add_output(p)
    p.set_defaults(func=run)


def _port_map(items: list[str]) -> dict[str, int] | None:
    if not items:
        return None
    out: dict[str, int] = {}
    for item in items:
        name, sep, num = item.partition("=")
        if not sep or not name or not num.isdigit():
            raise ConfigError(f"--if-port {item!r}: expected IFNAME=NUMBER")
        out[name] = int(num)
    return out


def _summary(bundle: Any) -> str:
    from fabricdoc.analysis.flaps import port_summary
    from fabricdoc.model.records import GpuHealth, LinkEvent, PortCounters, PortState, ProbeRun
    from fabricdoc.model.text import escape as safe

    lines = [f"node {safe(bundle.node)}"]
    for r in bundle.of(PortState):
        lines.append(f"  port {r.port:<3} {safe(r.ifname or '-'):<16} {safe(r.state):<7} ({r.source})")
    watch = bundle.extra.get("watch")
    if watch:
        for (node, port), s in port_summary(bundle.of(LinkEvent), watch["start"], watch["end"]).items():
            lines.append(f"  flaps {safe(node)}[{port}] {safe(s['ifname'])}: {s['flaps']} in {s['window_s']:.1f}s "
                         f"({s['flaps_per_min']:.1f}/min), down {s['down_s']:.3f}s")
    for c in bundle.of(PortCounters):
        if c.source == "tc" and (c.values.get("qdisc_drops") or c.values.get("qdisc_overlimits")):
            lines.append(f"  qdisc {safe(c.ifname)}: drops {c.values['qdisc_drops']} overlimits "
                         f"{c.values['qdisc_overlimits']} backlog {c.values['qdisc_backlog_bytes']}B")
    if not watch and bundle.of(PortCounters):
        lines.append("  counters sampled once: no rates and no verdict from this alone (--watch SECONDS samples twice)")
    n_events = len(bundle.of(LinkEvent))
    if n_events:
        lines.append(f"  link events: {n_events}")
    for c in bundle.host_checks:
        if c.status in ("fail", "unknown"):
            shown = "not seen" if c.status == "unknown" else "FAIL"
            lines.append(f"  host {safe(c.check):<13} {shown:<8} {safe(c.subject)}: {safe(c.reason)}")
    kinds: dict[str, int] = {}
    for e in bundle.kernel_events:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    if kinds:
        lines.append("  kernel log: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    for g in bundle.of(GpuHealth):
        lines.append(f"  gpu {g.index} {safe(g.uuid or '-')}: {g.status}" + (f" ({safe(g.error)})" if g.error else ""))
    for p in bundle.of(ProbeRun):
        lines.append(f"  probe {p.probe:<14} {p.status:<11} {p.duration_s * 1000:7.1f} ms  "
                     f"{safe(p.target)}" + (f": {safe(p.error)}" if p.error else ""))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.sources.host import collect_host
    from fabricdoc.sources.records import records_to_json

    if args.watch < 0:
        raise ConfigError("--watch must be >= 0 seconds")
    bundle = collect_host(
        node=args.node or os.environ.get("NODE_NAME") or None, netns=args.netns,
        sysfs_root=None if args.no_sysfs else args.sysfs_root,
        watch_s=args.watch, pcap_file=args.pcap, link_gbps=args.link_gbps,
        port_of=_port_map(args.if_port), gpus=not args.no_gpu, use_ethtool=not args.no_ethtool,
        kmsg_file=args.kmsg, use_kmsg=not args.no_kmsg, check_config=not args.no_hostconfig,
    )
    text = records_to_json(bundle.all_records, extra={"node": bundle.node, **bundle.extra})
    if args.output:
        from fabricdoc.report.files import write_atomic

        write_atomic(args.output, text + "\n")
    if args.json:
        sys.stdout.write(text + "\n")
    else:
        print(_summary(bundle))
    ran = [p for p in bundle.probes if p.status == "ok"]
    if not ran:
        first = next((p.error for p in bundle.probes if p.error), "no probe ran")
        print(f"fabricdoc probe: error: nothing could be collected: {first}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return EXIT_OK
