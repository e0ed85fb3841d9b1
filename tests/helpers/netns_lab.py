"""The test suite's one network-namespace lab: real kernel networking, created and deleted by name.

A :class:`NetnsLab` is a set of namespaces ``<prefix>-<short>`` joined by veth pairs.
Either build it by hand (:meth:`NetnsLab.netns`, :meth:`NetnsLab.veth`, :meth:`NetnsLab.nft`)
or let :meth:`NetnsLab.build` realise a :class:`Fabric`: every node (hosts and switches)
becomes a namespace ``<prefix>-<node>``, every cable a veth pair ``<prefix><i>a``/``<prefix><i>b``
with a /30; switches forward. Static /32 routes are installed from ``fabric.path`` for every
ordered pair of host ports, so the kernel path of each pair is exactly the path fabricdoc
reasons about. Every veth end is shaped with tbf to the cable's capacity, so a healthy pair
has a known expected bandwidth; :meth:`NetnsLab.degrade` lowers one cable's rate (both ends)
or drops a fraction of its packets with nftables (no netem here).

Only names with the lab's prefix (``fdbw`` unless told otherwise) are created, and
:meth:`NetnsLab.teardown` deletes exactly the namespaces it created, by name; deleting a
namespace removes its veth ends, qdiscs and nftables tables with it.

Each namespace gets its own resolver file, ``/etc/netns/<name>/resolv.conf`` (``ip netns exec``
mounts it over ``/etc/resolv.conf``), naming a nameserver on the namespace's own loopback: the lab
has no DNS, and the host's nameserver is only reachable through the lab's default routes, where a
switch answers "unreachable" at a rate-limited pace, so a lookup (torch's c10d names each peer
socket) waited out the resolver's 5 s timeout in some tests and not others. Refused on loopback,
a lookup fails at once. Teardown removes the file with its namespace.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric
from tests.helpers.waiting import wait_for

PREFIX = "fdbw"
NS_PREFIX = f"{PREFIX}-"
LAB_TOOLS = ("ip", "tc", "nft")
NETNS_ETC = Path("/etc/netns")  # per-namespace files `ip netns exec` mounts over /etc


def sh(*argv: str, check: bool = True, input_text: str | None = None,
       timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run a command (argv only, never a shell); with ``check``, a failure raises with its stderr."""
    proc = subprocess.run(list(argv), input=input_text, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.strip()[:400]}")
    return proc


def operstate(ns: str, ifname: str) -> str:
    """The kernel's operstate of ``ifname`` in namespace ``ns`` ("UP", "DOWN", ...), "GONE" if absent."""
    parts = sh("ip", "-n", ns, "-o", "link", "show", ifname, check=False).stdout.split()
    return parts[parts.index("state") + 1] if "state" in parts else "GONE"


def netns_available(tools: Iterable[str] = LAB_TOOLS) -> str | None:
    """None when namespaces and ``tools`` (veth, tc and nft by default) can be used here, else why not."""
    if os.geteuid() != 0:
        return "needs root"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    probe = f"{NS_PREFIX}probe"
    try:
        sh("ip", "netns", "add", probe)
        sh("ip", "netns", "del", probe)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot create a network namespace: {exc}"
    return None


def teardown_prefix(prefix: str | None = None) -> list[str]:
    """Delete every namespace whose name starts with ``prefix`` (default: this module's
    ``NS_PREFIX``), as an aborted run leaves them; returns the names deleted."""
    prefix = prefix or NS_PREFIX
    gone = []
    for line in sh("ip", "netns", "list").stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        if name.startswith(prefix):
            sh("ip", "netns", "del", name, check=False)
            _forget_etc(name)
            gone.append(name)
    return gone


def _own_etc(name: str) -> None:
    """Namespace ``name``'s resolver: a nameserver on its own loopback, so lookups fail at once."""
    etc = NETNS_ETC / name
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "resolv.conf").write_text("# fabricdoc test lab: no DNS here\nnameserver 127.0.0.1\n")


def _forget_etc(name: str) -> None:
    """Remove namespace ``name``'s /etc/netns files (and /etc/netns itself once empty)."""
    shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
    with contextlib.suppress(OSError):
        NETNS_ETC.rmdir()


@dataclass
class _End:
    ns: str
    ifname: str
    addr: str  # without prefix length


@dataclass
class NetnsLab:
    """Namespaces and veths (realising ``fabric`` once built); use as a context manager.

    ``prefix`` defaults to the module's ``PREFIX`` when the lab is made, so a copy of this
    module with its own ``PREFIX`` (tests/helpers/measured.py ``lab_module``) keeps to its names.
    """

    fabric: Fabric | None = None
    prefix: str = ""
    namespaces: list[str] = field(default_factory=list)
    ends: dict[PortRef, _End] = field(default_factory=dict)
    link_ifaces: dict[LinkKey, tuple[PortRef, PortRef]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.prefix = self.prefix or PREFIX

    def ns(self, short: str) -> str:
        """The name of this lab's namespace for ``short`` (a fabric node id)."""
        return f"{self.prefix}-{short}"

    # -- primitives --------------------------------------------------------
    def netns(self, short: str) -> str:
        """Create namespace ``<prefix>-<short>`` (replacing a stale one of that name), loopback up."""
        name = self.ns(short)
        sh("ip", "netns", "del", name, check=False)
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        _own_etc(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str,
             addr_a: str | None = None, addr_b: str | None = None) -> None:
        """A veth pair ``if_a`` (in ``ns_a``) <-> ``if_b`` (in ``ns_b``), addressed and up."""
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        for ns, ifname, addr in ((ns_a, if_a, addr_a), (ns_b, if_b, addr_b)):
            if addr:
                sh("ip", "-n", ns, "addr", "add", addr, "dev", ifname)
            sh("ip", "-n", ns, "link", "set", ifname, "up")
        wait_for(lambda: operstate(ns_a, if_a) == "UP" and operstate(ns_b, if_b) == "UP",
                 5, f"{if_a}/{if_b} up")

    def nft(self, ns: str, ruleset: str) -> None:
        """Load an nftables ruleset into namespace ``ns`` (it goes with the namespace)."""
        sh("ip", "netns", "exec", ns, "nft", "-f", "-", input_text=ruleset)

    def flap(self, ns: str, ifname: str, watch_ns: str, watch_if: str, times: int) -> None:
        """Take ``ifname`` down and up ``times`` times, waiting each time until the peer saw it."""
        for _ in range(times):
            sh("ip", "-n", ns, "link", "set", ifname, "down")
            wait_for(lambda: operstate(watch_ns, watch_if) != "UP", 5, f"{watch_if} down")
            sh("ip", "-n", ns, "link", "set", ifname, "up")
            wait_for(lambda: operstate(watch_ns, watch_if) == "UP", 5, f"{watch_if} up")

    # -- a fabric ------------------------------------------------------------
    def build(self) -> NetnsLab:
        """Realise ``fabric``: namespaces, shaped veths and routes; on failure nothing is left."""
        try:
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def _build(self) -> None:
        f = self.fabric
        if f is None:
            raise ValueError("netns lab: build() needs a fabric")
        for node in sorted(f.nodes):
            name = self.netns(node)
            sysctl = ["net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"]
            if f.nodes[node].kind == "switch":
                sysctl.append("net.ipv4.ip_forward=1")
            sh("ip", "netns", "exec", name, "sysctl", "-qw", *sysctl)
        for i, key in enumerate(sorted(f.links, key=str)):
            if i >= 16384:
                raise RuntimeError("netns lab: too many links for the 10.200/16 plan")
            a, b = key.a, key.b
            base = (i // 64, (i % 64) * 4)
            addr_a, addr_b = f"10.200.{base[0]}.{base[1] + 1}", f"10.200.{base[0]}.{base[1] + 2}"
            if_a, if_b = f"{self.prefix}{i}a", f"{self.prefix}{i}b"
            ns_a, ns_b = self.ns(a.node), self.ns(b.node)
            self.veth(ns_a, if_a, ns_b, if_b, f"{addr_a}/30", f"{addr_b}/30")
            self.ends[a] = _End(ns_a, if_a, addr_a)
            self.ends[b] = _End(ns_b, if_b, addr_b)
            self.link_ifaces[key] = (a, b)
            for end in (a, b):
                self._shape(end, f.links[key].capacity_gbps * 1000.0)
        self._routes()

    def _shape(self, end: PortRef, rate_mbit: float) -> None:
        e = self.ends[end]
        sh("ip", "netns", "exec", e.ns, "tc", "qdisc", "replace", "dev", e.ifname, "root", "tbf",
           "rate", f"{rate_mbit:g}mbit", "burst", "64kb", "latency", "200ms")

    def _routes(self) -> None:
        f = self.fabric
        assert f is not None
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
                for hop, key in enumerate(f.path(src, dst)):
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
            sh("ip", "-n", ns, "-batch", "-", input_text="\n".join(dict.fromkeys(lines)) + "\n")

    def write_fabric_file(self, path: Path) -> Path:
        """The built lab as a fabric file: each host names its namespace, interface and address."""
        assert self.fabric is not None
        lines = [f"name: {self.fabric.name}", "nodes:"]
        for node in self.fabric.nodes.values():
            if node.kind == "switch":
                lines.append(f"  - {{id: {node.id}, kind: switch, ports: {node.num_ports}}}")
                continue
            port = PortRef(node.id, 1)
            lines.append(
                f"  - {{id: {node.id}, kind: host, ports: 1, attrs: {{netns: {self.namespace_of(port)}, "
                f"ifnames: {{1: {self.ifname_of(port)}}}, addresses: {{1: {self.address_of(port)}}}}}}}"
            )
        lines.append("links:")
        for key, link in self.fabric.links.items():
            lines.append(f'  - {{a: "{key.a}", b: "{key.b}", lanes: {link.lanes}, lane_gbps: {link.lane_gbps:g}}}')
        path.write_text("\n".join(lines) + "\n")
        return path

    # -- faults ------------------------------------------------------------
    def _table(self, what: str) -> str:
        return re.sub(r"\W", "_", f"{self.prefix}{what}")

    def degrade(self, key: LinkKey, *, rate_mbit: float | None = None, loss_pct: float | None = None) -> None:
        """Slow one cable in both directions: a lower tbf rate, or nftables random drop."""
        for end in self.link_ifaces[key]:
            if rate_mbit is not None:
                self._shape(end, rate_mbit)
            if loss_pct is not None:
                e = self.ends[end]
                per_mille = max(1, int(round(loss_pct * 10)))
                match = "" if per_mille >= 1000 else f"numgen random mod 1000 < {per_mille} "
                self.nft(e.ns, (
                    f"table inet {self._table('loss')} {{\n chain out {{\n"
                    "  type filter hook postrouting priority 0; policy accept;\n"
                    f'  oifname "{e.ifname}" {match}drop\n }}\n}}\n'
                ))

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
            self.nft(e.ns, (
                f"table inet {self._table('collapse')} {{\n"
                f" set active {{ type ipv4_addr . ipv4_addr . inet_service . inet_service; size {int(over_flows)}; "
                "flags dynamic,timeout; timeout 1s; }\n"
                " chain out {\n  type filter hook postrouting priority 0; policy accept;\n"
                f"  {data} {flow} @active update @active {{ {flow} }} accept\n"
                f"  {data} add @active {{ {flow} }} accept\n"  # a full set: no room, falls through
                f"  {data} numgen random mod 1000 < {per_mille} counter drop\n }}\n}}\n"
            ))

    def collapse_drops(self, key: LinkKey) -> int:
        """Packets the :meth:`collapse` rules of ``key`` dropped so far (both ends)."""
        total = 0
        for end in self.link_ifaces[key]:
            e = self.ends[end]
            out = sh("ip", "netns", "exec", e.ns, "nft", "list", "table", "inet", self._table("collapse")).stdout
            total += sum(int(n) for n in re.findall(r"counter packets (\d+)", out))
        return total

    def link_down(self, key: LinkKey) -> None:
        """Take one cable down (both ends): traffic over it black-holes, tests hang."""
        for end in self.link_ifaces[key]:
            e = self.ends[end]
            sh("ip", "-n", e.ns, "link", "set", e.ifname, "down")

    def link_up(self, key: LinkKey) -> None:
        """Bring a cable :meth:`link_down` took down back up (its shaping stays), waiting for both ends.
        Routes through it that the kernel dropped with it come back with :meth:`_routes`."""
        ends = [self.ends[end] for end in self.link_ifaces[key]]
        for e in ends:
            sh("ip", "-n", e.ns, "link", "set", e.ifname, "up")
        wait_for(lambda: all(operstate(e.ns, e.ifname) == "UP" for e in ends), 5, f"{key} up")

    # -- launcher mapping --------------------------------------------------
    def namespace_of(self, port: PortRef) -> str:
        """The namespace holding ``port``'s end of its cable."""
        return self.ends[port].ns

    def address_of(self, port: PortRef) -> str:
        """``port``'s IPv4 address (no prefix length)."""
        return self.ends[port].addr

    def ifname_of(self, port: PortRef) -> str:
        """``port``'s interface name inside its namespace."""
        return self.ends[port].ifname

    def teardown(self) -> None:
        """Delete the namespaces this lab created, by name (their veths, qdiscs and tables go with them)."""
        for name in reversed(self.namespaces):
            sh("ip", "netns", "del", name, check=False)
            _forget_etc(name)
        self.namespaces.clear()

    def __enter__(self) -> NetnsLab:
        return self.build()

    def __exit__(self, *exc: object) -> None:
        self.teardown()
