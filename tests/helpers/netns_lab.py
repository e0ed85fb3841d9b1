"""A small leaf/spine fabric built from real kernel networking, for the bandwidth tests.

Every node of a :class:`Fabric` (hosts and switches) becomes a network
namespace ``fdbw-<node>``; every cable a veth pair ``fdbw<i>a``/``fdbw<i>b``
with a /30; switches forward. Static /32 routes are installed from
``fabric.path`` for every ordered pair of host ports, so the kernel path of
each pair is exactly the path fabricdoc reasons about. Every veth end is
shaped with tbf to the cable's capacity, so a healthy pair has a known
expected bandwidth; :meth:`NetnsLab.degrade` lowers one cable's rate (both
ends) or drops a fraction of its packets with nftables (no netem here).

Only names with the ``fdbw`` prefix are created, and teardown deletes them by name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

PREFIX = "fdbw"
NS_PREFIX = f"{PREFIX}-"


def _run(argv: list[str], input_text: str | None = None, timeout: float = 30.0) -> str:
    proc = subprocess.run(argv, input=input_text, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[:400]}")
    return proc.stdout


def netns_available() -> str | None:
    """None when namespaces, veth, tc and nft can be used here, else why not."""
    import os

    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "tc", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    try:
        _run(["ip", "netns", "add", f"{NS_PREFIX}probe"])
        _run(["ip", "netns", "del", f"{NS_PREFIX}probe"])
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot create a network namespace: {exc}"
    return None


def teardown_prefix(prefix: str = NS_PREFIX) -> list[str]:
    """Delete every namespace whose name starts with our prefix (left by an aborted run)."""
    gone = []
    for line in _run(["ip", "netns", "list"]).splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(prefix):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)
            gone.append(name)
    return gone


@dataclass
class _End:
    ns: str
    ifname: str
    addr: str  # without prefix length


@dataclass
class NetnsLab:
    """The namespaces, veths and routes realising ``fabric``; use as a context manager."""

    fabric: Fabric
    namespaces: list[str] = field(default_factory=list)
    ends: dict[PortRef, _End] = field(default_factory=dict)
    link_ifaces: dict[LinkKey, tuple[PortRef, PortRef]] = field(default_factory=dict)
    _nft: set[str] = field(default_factory=set)

    def ns(self, node: str) -> str:
        return f"{NS_PREFIX}{node}"

    # -- building ----------------------------------------------------------
    def build(self) -> NetnsLab:
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def _build(self) -> None:
        f = self.fabric
        for node in sorted(f.nodes):
            name = self.ns(node)
            _run(["ip", "netns", "add", name])
            self.namespaces.append(name)
            sysctl = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
            if f.nodes[node].kind == "switch":
                sysctl.append("net.ipv4.ip_forward=1")
            _run(["ip", "netns", "exec", name, "sysctl", "-qw", *sysctl])
            _run(["ip", "-n", name, "link", "set", "lo", "up"])
        for i, key in enumerate(sorted(f.links, key=str)):
            a, b = key.a, key.b
            if i >= 16384:
                raise RuntimeError("netns lab: too many links for the 10.200/16 plan")
            base = (i // 64, (i % 64) * 4)
            addr_a = f"10.200.{base[0]}.{base[1] + 1}"
            addr_b = f"10.200.{base[0]}.{base[1] + 2}"
            if_a, if_b = f"{PREFIX}{i}a", f"{PREFIX}{i}b"
            ns_a, ns_b = self.ns(a.node), self.ns(b.node)
            _run(["ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b])
            for ns, ifname, addr in ((ns_a, if_a, addr_a), (ns_b, if_b, addr_b)):
                _run(["ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", ifname])
                _run(["ip", "-n", ns, "link", "set", ifname, "up"])
            self.ends[a] = _End(ns_a, if_a, addr_a)
            self.ends[b] = _End(ns_b, if_b, addr_b)
            self.link_ifaces[key] = (a, b)
            rate = f.links[key].capacity_gbps * 1000.0
            for end in (a, b):
                self._shape(end, rate)
        self._routes()

    def _shape(self, end: PortRef, rate_mbit: float) -> None:
        e = self.ends[end]
        _run(["ip", "netns", "exec", e.ns, "tc", "qdisc", "replace", "dev", e.ifname, "root", "tbf",
              "rate", f"{rate_mbit:g}mbit", "burst", "64kb", "latency", "200ms"])  # fmt: skip

    def _routes(self) -> None:
        f = self.fabric
        ports = f.host_ports()
        batches: dict[str, list[str]] = {}
        chosen: dict[tuple[str, PortRef], LinkKey] = {}
        for p in ports:
            peer = f.peer(p)
            assert peer is not None
            e = self.ends[p]
            batches.setdefault(e.ns, []).append(f"route replace default via {self.ends[peer].addr} dev {e.ifname}")
        for src in ports:
            for dst in ports:
                if src == dst:
                    continue
                here = src.node
                path = f.path(src, dst)
                for hop, key in enumerate(path):
                    out = key.a if key.a.node == here else key.b
                    far = key.other(out)
                    if hop > 0:  # at a switch: send dst's address out of this cable
                        prior = chosen.setdefault((here, dst), key)
                        if prior != key:
                            raise RuntimeError(f"routing at {here} toward {dst} is not destination-based")
                        e = self.ends[out]
                        batches.setdefault(e.ns, []).append(
                            f"route replace {self.ends[dst].addr}/32 via {self.ends[far].addr} dev {e.ifname}"
                        )
                    here = far.node
        for ns, lines in batches.items():
            _run(["ip", "-n", ns, "-batch", "-"], input_text="\n".join(dict.fromkeys(lines)) + "\n")

    # -- faults ------------------------------------------------------------
    def degrade(self, key: LinkKey, *, rate_mbit: float | None = None, loss_pct: float | None = None) -> None:
        """Slow one cable in both directions: a lower tbf rate, or nftables random drop."""
        for end in self.link_ifaces[key]:
            if rate_mbit is not None:
                self._shape(end, rate_mbit)
            if loss_pct is not None:
                e = self.ends[end]
                per_mille = max(1, int(round(loss_pct * 10)))
                match = "" if per_mille >= 1000 else f"numgen random mod 1000 < {per_mille} "
                script = (
                    f"table inet {PREFIX}loss {{\n chain out {{\n  type filter hook postrouting priority 0; policy accept;\n"
                    f'  oifname "{e.ifname}" {match}drop\n }}\n}}\n'
                )
                _run(["ip", "netns", "exec", e.ns, "nft", "-f", "-"], input_text=script)
                self._nft.add(e.ns)

    def collapse(self, key: LinkKey, *, over_flows: int, loss_pct: float) -> None:
        """A load-only fault on one cable: while more than ``over_flows`` TCP flows carry data out of one
        end at once, drop ``loss_pct`` of the data packets of the flows beyond them; fewer flows keep the
        full rate. Per end, so per direction, like the flows fabricdoc's load model counts.

        nftables: a dynamic set of at most ``over_flows`` flows (5-tuple) that sent a packet over 1000
        bytes in the last second; a flow the full set has no room for is the one that loses packets.
        Idle connections (a rendezvous store's, gloo's unused mesh) carry no data and do not count."""
        per_mille = max(1, min(1000, int(round(loss_pct * 10))))
        flow = "ip saddr . ip daddr . tcp sport . tcp dport"
        for end in self.link_ifaces[key]:
            e = self.ends[end]
            data = f'oifname "{e.ifname}" meta l4proto tcp meta length > 1000'
            script = (
                f"table inet {PREFIX}collapse {{\n"
                f" set active {{ type ipv4_addr . ipv4_addr . inet_service . inet_service; size {int(over_flows)}; "
                "flags dynamic,timeout; timeout 1s; }\n"
                " chain out {\n  type filter hook postrouting priority 0; policy accept;\n"
                f"  {data} {flow} @active update @active {{ {flow} }} accept\n"
                f"  {data} add @active {{ {flow} }} accept\n"  # a full set: no room, falls through
                f"  {data} numgen random mod 1000 < {per_mille} counter drop\n }}\n}}\n"
            )
            _run(["ip", "netns", "exec", e.ns, "nft", "-f", "-"], input_text=script)
            self._nft.add(e.ns)

    def collapse_drops(self, key: LinkKey) -> int:
        """Packets the :meth:`collapse` rules of ``key`` dropped so far (both ends)."""
        total = 0
        for end in self.link_ifaces[key]:
            e = self.ends[end]
            out = _run(["ip", "netns", "exec", e.ns, "nft", "list", "table", "inet", f"{PREFIX}collapse"])
            total += sum(int(n) for n in re.findall(r"counter packets (\d+)", out))
        return total

    def link_down(self, key: LinkKey) -> None:
        """Take one cable down (both ends): traffic over it black-holes, tests hang."""
        for end in self.link_ifaces[key]:
            e = self.ends[end]
            _run(["ip", "-n", e.ns, "link", "set", e.ifname, "down"])

    # -- launcher mapping --------------------------------------------------
    def namespace_of(self, port: PortRef) -> str:
        return self.ends[port].ns

    def address_of(self, port: PortRef) -> str:
        return self.ends[port].addr

    def ifname_of(self, port: PortRef) -> str:
        return self.ends[port].ifname

    def teardown(self) -> None:
        for name in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30, check=False)
        self.namespaces.clear()

    def __enter__(self) -> NetnsLab:
        return self.build()

    def __exit__(self, *exc: object) -> None:
        self.teardown()


def lab_fabric_file(lab: NetnsLab, path):
    """The lab as a fabric file: each host says its namespace, interface and address."""
    lines = ["name: netns-lab", "nodes:"]
    for node in lab.fabric.nodes.values():
        if node.kind == "switch":
            lines.append(f"  - {{id: {node.id}, kind: switch, ports: {node.num_ports}}}")
            continue
        port = PortRef(node.id, 1)
        lines.append(
            f"  - {{id: {node.id}, kind: host, ports: 1, attrs: {{netns: {lab.namespace_of(port)}, "
            f"ifnames: {{1: {lab.ifname_of(port)}}}, addresses: {{1: {lab.address_of(port)}}}}}}}"
        )
    lines.append("links:")
    for key in lab.fabric.links:
        lines.append(f'  - {{a: "{key.a}", b: "{key.b}", lanes: 1, lane_gbps: 0.1}}')
    path.write_text("\n".join(lines) + "\n")
    return path


@contextmanager
def lab_for_test(fabric: Fabric) -> Iterator[NetnsLab]:
    """A built lab for one test, skipping it when torch or network namespaces are missing here."""
    import pytest

    pytest.importorskip("torch")
    why = netns_available()
    if why:
        pytest.skip(why)
    with NetnsLab(fabric) as built:
        yield built
