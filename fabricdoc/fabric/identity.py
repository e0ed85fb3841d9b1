"""Host identity: which scheduler host a fabric node is, and records mapped onto fabric ids.

On an InfiniBand fabric every HCA is its own channel adapter, described
``"<hostname> <device>"`` by rdma-ndd (``a08-p1-dgx-04-c01 mlx5_5``,
``h4-1-gpu HCA-7``, ``node ibp12s0``, ``node bnxt_re0``...): an HGX/DGX host is
eight CAs, one per rail. :func:`identify` turns the CAs into hosts:

- a CA described ``"<host> <device>"`` (or named by a host map) belongs to
  ``host``: ``attrs["host"]``, ``attrs["device"]``, and ``attrs["rail"]``, its
  0-based rail index (see :func:`identify`); a one-word description (an ibsim
  node) is the host itself;
- a CA whose description is the firmware default (``MT4129 ConnectX7   Mellanox
  Technologies``) or names no host stays a host *node* without a host name
  (``attrs["unnamed"]`` says why): it is reported, never grouped into a fake
  host, and its scheduler name is its GUID until a host map names it;
- SHARP aggregation nodes (``Mellanox Technologies Aggregation Node``, device
  0xcf09), switch management CAs (a CA sharing a switch's system image GUID,
  or described like a switch, ``MF0;...``) and routers are not hosts: they stay
  in the fabric, cables and counters included, as ``kind="switch"`` nodes with
  ``attrs["role"]`` ``aggregation``, ``switch-management`` or ``router``, so no
  host list, test plan, job ring or drain ever names them.

Records come from ``fabricdoc probe`` on each node, from a saved sweep, or from
nccl-tests logs; their node names may be labels, GUIDs or hostnames and
Ethernet records may name an interface instead of a port number, so each is
mapped onto the fabric's ids before analysis (:func:`align`).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricdoc.errors import ConfigError, TopologyError
from fabricdoc.fabric.hostmap import HostMap, HostMapEntry
from fabricdoc.model.records import Node, Observations, PortRef, ProbeRun
from fabricdoc.model.topology import Fabric

ROLE_HCA = "hca"
ROLE_AGGREGATION = "aggregation"
ROLE_SWITCH_MANAGEMENT = "switch-management"
ROLE_ROUTER = "router"
NOT_HOSTS = {ROLE_AGGREGATION: "a SHARP aggregation node", ROLE_SWITCH_MANAGEMENT: "a switch management CA",
             ROLE_ROUTER: "an InfiniBand router"}

_AN_DEVICE_ID = 0xCF09
_HOST_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# RDMA device names end in a number (mlx5_5, HCA-6, ibp12s0, bnxt_re0, irdma1, efa_0, rdmap16s27).
_DEVICE_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*\d[A-Za-z0-9]*$")
_DEFAULT_DESC = re.compile(r"^MT\d+\b|\bMellanox Technologies\s*$|^(?:localhost|localhost\.localdomain)\b")
_SWITCH_LIKE = re.compile(r"^MF0;|;.*:.*/U\d+$")


@dataclass(frozen=True)
class CaName:
    """What a CA's node description says about its host: ``host`` and ``device``, or why not."""

    host: str | None
    device: str | None
    reason: str | None = None


def ca_name(description: str) -> CaName:
    """Read ``"<host> <device>"`` (or a bare host name) from a CA's node description."""
    desc = description.strip()
    if not desc:
        return CaName(None, None, "empty node description")
    if _DEFAULT_DESC.search(desc):
        return CaName(None, None, f"default node description {desc!r} (nothing on the host set it)")
    words = desc.split()
    if len(words) == 1 and _HOST_WORD.match(words[0]):
        return CaName(words[0], None)
    if len(words) == 2 and _HOST_WORD.match(words[0]) and _DEVICE_WORD.match(words[1]):
        return CaName(words[0], words[1])
    return CaName(None, None, f"node description {desc!r} is not '<host> <device>'")


def device_order(device: str | None) -> tuple:
    """A sort key putting devices in number order: mlx5_2 before mlx5_10, HCA-2 before HCA-11."""
    if device is None:
        return (1, ())
    return (0, tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", device)))


@dataclass(frozen=True)
class OffRail:
    """An HCA cabled to a leaf switch that serves another rail: ``rail`` is the HCA's, ``switch_rail``
    the rail of most HCAs on ``switch`` (node ids, with their labels for messages)."""

    hca: str
    rail: int
    switch: str
    switch_rail: int
    hca_label: str
    switch_label: str


@dataclass
class IdentityReport:
    """What :func:`identify` found: hosts with their HCA nodes in rail order, and what it could not name."""

    hosts: dict[str, list[str]] = field(default_factory=dict)
    unnamed: dict[str, str] = field(default_factory=dict)  # node id -> why it has no host name
    not_hosts: dict[str, str] = field(default_factory=dict)  # node id -> role
    map_unused: list[HostMapEntry] = field(default_factory=list)
    off_rail: dict[str, list[OffRail]] = field(default_factory=dict)  # host -> its HCAs on another rail's switch

    def probe_runs(self, source: str) -> list[ProbeRun]:
        """Warnings for the report's probe health: HCAs without a host name, host-map lines that named none,
        hosts with an HCA on another rail's leaf."""
        runs = []
        if self.unnamed:
            first_id, why = next(iter(self.unnamed.items()))
            runs.append(ProbeRun("identity", source, "warning", 0.0,
                                 f"{len(self.unnamed)} HCAs have no host name (first: {first_id}: {why}); "
                                 f"name them with --host-map"))
        for entry in self.map_unused:
            runs.append(ProbeRun("identity", f"{entry.host}", "warning", 0.0,
                                 f"host map line {entry.line_no}: {entry.key[0]} {entry.key[1]} names no HCA "
                                 f"of this fabric"))
        for host, wrong in self.off_rail.items():
            runs.append(ProbeRun("identity", host, "warning", 0.0, self._off_rail_message(host, wrong)))
        return runs

    def _off_rail_message(self, host: str, wrong: list[OffRail]) -> str:
        parts = "; ".join(f"{w.hca_label.removeprefix(host + ' ')} (rail {w.rail}) is cabled to {w.switch_label}, "
                          f"a rail-{w.switch_rail} leaf" for w in wrong)
        hcas = len(self.hosts.get(host, ()))
        why = "each rail's HCA belongs on that rail's leaf, or its traffic crosses rails"
        if sorted(w.rail for w in wrong) == sorted(w.switch_rail for w in wrong):
            why = f"its cables look swapped: {why}"
        elif len({w.hca for w in wrong}) == hcas:
            why = (f"none of its {hcas} HCAs is on its own rail's leaf: the host is not wired rail by rail "
                   "(a management or storage node?)")
        return f"{host}: {parts}; {why}"


def identify(fabric: Fabric, host_map: HostMap | None = None) -> IdentityReport:
    """Give every InfiniBand CA of ``fabric`` its role, host and rail (see the module doc); idempotent.

    An HCA's rail is, in this order: the rail a host map gives; else its device's place among
    the fabric's device names of its kind (``mlx5_0, mlx5_1, mlx5_4, mlx5_5`` are rails 0-3
    on every host of the fabric, so a host whose ``mlx5_4`` is not seen still has ``mlx5_5``
    on rail 3); else, when names do not tell (no device, or two of a host's HCAs on one
    rail), the rail of the switch it is cabled to (the rail most HCAs on that switch have);
    else the host's first free rail. Never its place among the host's HCAs present. An HCA
    of a multi-HCA host cabled to a switch that serves another rail is listed in
    ``IdentityReport.off_rail`` (a warning in the report's probe health).

    Nodes built from ibnetdiscover or ibdiagnet carry ``attrs["ib_type"]``; other
    fabrics (YAML, generators) are left as they are unless ``host_map`` names a node.
    """
    report = IdentityReport()
    switch_systems = {n.attrs.get("system_guid") for n in fabric.nodes.values()
                      if n.attrs.get("ib_type") == "Switch" and n.attrs.get("system_guid")}
    lids_of: dict[str, list[int]] = {}
    for ref, lid in fabric.port_lids.items():
        lids_of.setdefault(ref.node, []).append(lid)
    matched: dict[int, list[str]] = {}
    explicit: dict[str, int] = {}
    named: list[Node] = []
    for node in fabric.nodes.values():
        role = _role(node, switch_systems)
        if role in NOT_HOSTS:
            _not_a_host(node, role)
            report.not_hosts[node.id] = role
            continue
        if role is None and node.kind != "host":
            continue  # a switch
        entry = host_map.find(node.guid, tuple(lids_of.get(node.id, ())), node.label) if host_map else None
        if entry is not None:
            matched.setdefault(entry.line_no, []).append(node.id)
            _name(node, entry.host, _device_of(node))
            named.append(node)
            if entry.rail is not None:
                explicit[node.id] = entry.rail
        elif role == ROLE_HCA and _name_from_description(node, report):
            named.append(node)
    if host_map is not None:
        _check_map_matches(host_map, matched)
        report.map_unused = [e for e in host_map.entries if e.line_no not in matched]
    _assign_rails(fabric, named, explicit, report)
    fabric.invalidate()
    return report


def _check_map_matches(host_map: HostMap, matched: dict[int, list[str]]) -> None:
    """One entry, one HCA: a description shared by several CAs (a default one) cannot name a host."""
    for entry in host_map.entries:
        nodes = matched.get(entry.line_no, [])
        if len(nodes) > 1:
            raise ConfigError(f"{host_map.source}:{entry.line_no}: {entry.key[0]} {entry.key[1]!r} matches "
                              f"{len(nodes)} CAs ({nodes[0]}, {nodes[1]}...): name each by guid or lid")


def _role(node: Node, switch_systems: set) -> str | None:
    """ROLE_HCA for a CA that is a host's, one of NOT_HOSTS for the others, None for what is
    not an InfiniBand CA or router (switches, and every node of a YAML or generated fabric)."""
    ib_type = node.attrs.get("ib_type")
    if ib_type == "Rt":
        return ROLE_ROUTER
    if ib_type != "Ca":
        return None
    if "Aggregation Node" in node.label or node.attrs.get("device_id") == _AN_DEVICE_ID:
        return ROLE_AGGREGATION
    if node.attrs.get("system_guid") in switch_systems or _SWITCH_LIKE.search(node.label):
        return ROLE_SWITCH_MANAGEMENT
    return ROLE_HCA


def _not_a_host(node: Node, role: str) -> None:
    node.kind = "switch"
    node.attrs["role"] = role
    for key in ("host", "rail", "device", "unnamed"):
        node.attrs.pop(key, None)


def _name(node: Node, host: str, device: str | None) -> None:
    node.kind = "host"
    node.attrs["role"] = ROLE_HCA
    node.attrs["host"] = host
    node.attrs.pop("unnamed", None)
    if device is not None:
        node.attrs["device"] = device


def _device_of(node: Node) -> str | None:
    return ca_name(node.label).device


def _name_from_description(node: Node, report: IdentityReport) -> bool:
    """Name the CA from its description; False (and the reason kept) when it names no host."""
    name = ca_name(node.label)
    if name.host is not None:
        _name(node, name.host, name.device)
        return True
    node.kind = "host"
    node.attrs["role"] = ROLE_HCA
    for key in ("host", "rail", "device"):
        node.attrs.pop(key, None)
    node.attrs["unnamed"] = name.reason or "no host name"
    report.unnamed[node.id] = node.attrs["unnamed"]
    return False


def _assign_rails(fabric: Fabric, named: list[Node], explicit: dict[str, int], report: IdentityReport) -> None:
    """Rails per host (the order :func:`identify` states), then the HCAs cabled to another rail's switch."""
    members: dict[str, list[Node]] = {}
    for node in named:
        members.setdefault(str(node.attrs["host"]), []).append(node)
    by_name = _rails_by_name(n for n in named if n.id not in explicit)
    rails: dict[str, int] = {}
    for nodes in members.values():
        taken = {explicit[n.id] for n in nodes if n.id in explicit}
        counts = Counter(by_name[n.id] for n in nodes if n.id in by_name)
        for node in nodes:
            if node.id in explicit:
                rails[node.id] = explicit[node.id]
            elif node.id in by_name and counts[by_name[node.id]] == 1 and by_name[node.id] not in taken:
                rails[node.id] = by_name[node.id]
    cabled = {n.id: _switches_of(fabric, n.id) for n in named}
    multi = [n for nodes in members.values() if len(nodes) > 1 for n in nodes]
    switch_rails = _switch_rails({n.id: cabled[n.id] for n in multi if n.id in rails}, rails)
    for host, nodes in members.items():
        taken = {rails[n.id] for n in nodes if n.id in rails}
        rest = sorted((n for n in nodes if n.id not in rails),
                      key=lambda n: (device_order(n.attrs.get("device")), n.guid or n.id))
        for node in rest:
            seen = [switch_rails[s] for s in cabled[node.id] if s in switch_rails]
            if seen and seen[0] not in taken:
                rails[node.id] = seen[0]
                taken.add(seen[0])
        free = (r for r in itertools.count() if r not in taken)
        for node in rest:
            if node.id not in rails:
                rails[node.id] = next(free)
        for node in nodes:
            node.attrs["rail"] = rails[node.id]
        report.hosts[host] = [n.id for n in sorted(nodes, key=lambda n: n.attrs["rail"])]
    for node in multi:
        for switch in cabled[node.id]:
            if switch in switch_rails and switch_rails[switch] != rails[node.id]:
                report.off_rail.setdefault(str(node.attrs["host"]), []).append(
                    OffRail(node.id, rails[node.id], switch, switch_rails[switch], node.label, fabric.label(switch)))
    for wrong in report.off_rail.values():
        wrong.sort(key=lambda w: (w.rail, w.hca))


def _rails_by_name(nodes: Iterable[Node]) -> dict[str, int]:
    """Node id -> its device's place among every device name of its kind on the fabric (``mlx5_N``,
    ``HCA-N``, ``ibpNsM``: the name with its numbers taken out), in number order."""
    kinds: dict[str, set[str]] = {}
    device_of: dict[str, str] = {}
    for node in nodes:
        device = node.attrs.get("device")
        if isinstance(device, str):
            device_of[node.id] = device
            kinds.setdefault(re.sub(r"\d+", "#", device), set()).add(device)
    place = {d: i for devices in kinds.values() for i, d in enumerate(sorted(devices, key=device_order))}
    return {nid: place[d] for nid, d in device_of.items()}


def _switches_of(fabric: Fabric, node_id: str) -> list[str]:
    """The switches a node's ports are cabled to, in port order."""
    out = []
    for port in fabric.host_ports(node_id):
        far = fabric.peer(port)
        if far is not None and fabric.nodes[far.node].kind == "switch" and far.node not in out:
            out.append(far.node)
    return out


def _switch_rails(cabled: dict[str, list[str]], rails: dict[str, int]) -> dict[str, int]:
    """Switch id -> the rail more than half of the HCAs cabled to it (HCA id -> its switches) are on;
    no entry when no rail has more than half."""
    on: dict[str, Counter] = {}
    for hca, switches in cabled.items():
        for switch in switches:
            on.setdefault(switch, Counter())[rails[hca]] += 1
    out = {}
    for switch, counts in on.items():
        rail, count = counts.most_common(1)[0]
        if 2 * count > sum(counts.values()):
            out[switch] = rail
    return out


# -- names the scheduler uses --------------------------------------------------------


def host_name(fabric: Fabric, node_id: str) -> str:
    """The scheduler-facing host name of a host node: an HCA's host on InfiniBand, the node's
    label elsewhere; an HCA no description or host map names is called by its node id."""
    node = fabric.nodes.get(node_id)
    if node is None:
        return node_id
    host = node.attrs.get("host")
    if host:
        return str(host)
    if node.attrs.get("unnamed"):
        return node.id
    return node.label


def _rail_key(node: Node) -> tuple:
    rail = node.attrs.get("rail")
    return (0, int(rail), node.id) if isinstance(rail, int) else (1, 0, node.id)


def host_index(fabric: Fabric) -> dict[str, list[str]]:
    """Every scheduler host name -> its host nodes in rail order (one pass, for bulk look-ups)."""
    out: dict[str, list[Node]] = {}
    for node in fabric.hosts():
        out.setdefault(host_name(fabric, node.id), []).append(node)
    return {name: [n.id for n in sorted(nodes, key=_rail_key)] for name, nodes in out.items()}


def host_nodes(fabric: Fabric, name: str) -> list[str]:
    """The fabric node ids of a host named as the scheduler names it (every HCA of a
    multi-HCA host, in rail order), or of the node with that id, label or GUID; empty when unknown."""
    found = [n for n in fabric.hosts() if host_name(fabric, n.id) == name]
    if found:
        return [n.id for n in sorted(found, key=_rail_key)]
    try:
        return [fabric.resolve_node(name)]
    except TopologyError:
        return []


def host_rails(fabric: Fabric) -> dict[str, list[PortRef]]:
    """Every named host -> its cabled ports in rail order (rail 0 first; a multi-port HCA's
    ports in port order). What a per-rail ring needs: rank i's rail r talks to rank i+1's
    rail r. HCAs without a host name are left out: they cannot be a job's host."""
    out: dict[str, list[PortRef]] = {}
    for name, ids in host_index(fabric).items():
        if fabric.nodes[ids[0]].attrs.get("unnamed"):
            continue
        ports = [p for nid in ids for p in fabric.cabled_ports(nid)]
        if ports:
            out[name] = ports
    return out


def unnamed(fabric: Fabric) -> dict[str, str]:
    """Host nodes (HCAs) no description or host map names: node id -> why."""
    return {n.id: str(n.attrs["unnamed"]) for n in fabric.hosts() if n.attrs.get("unnamed")}


@dataclass
class HostResolution:
    """Scheduler names resolved onto the fabric: each name's host nodes, or why it has none."""

    hosts: dict[str, list[str]] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)


def resolve_hosts(fabric: Fabric, names: Iterable[str]) -> HostResolution:
    """Resolve scheduler host names (a job's hosts, a Slurm node list) to host nodes; every name
    that does not resolve is kept with the reason, so a report can say which and why."""
    index = host_index(fabric)
    lower: dict[str, list[str]] = {}
    for name in index:
        lower.setdefault(name.lower(), []).append(name)
    missing_names = len(unnamed(fabric))
    out = HostResolution()
    for raw in names:
        name = str(raw).strip()
        if not name:
            continue
        if name in index:
            out.hosts[name] = index[name]
            continue
        nodes = host_nodes(fabric, name)
        if nodes and all(fabric.nodes[n].kind == "host" for n in nodes):
            out.hosts[name] = index.get(host_name(fabric, nodes[0]), nodes)
            continue
        out.unresolved[name] = _why_not(fabric, name, nodes, lower, missing_names)
    return out


def _why_not(fabric: Fabric, name: str, nodes: list[str], lower: dict[str, list[str]], missing: int) -> str:
    if nodes:
        node = fabric.nodes[nodes[0]]
        role = node.attrs.get("role")
        return f"{name!r} is {NOT_HOSTS.get(str(role), 'a switch')}, not a host"
    same = lower.get(name.lower())
    if same:
        return f"no host {name!r}; {same[0]!r} differs only in case"
    short = name.split(".")[0]
    near = sorted(host for hosts in lower.values() for host in hosts if host.split(".")[0] == short)
    if near:
        return f"no host {name!r}; the fabric names {near[0]!r}"
    why = f"no CA is described '{name} <device>' and no host map entry names it"
    if missing:
        why += f" ({missing} HCAs have no host name: map them with --host-map)"
    return why


def port_for_ifname(fabric: Fabric, node_id: str, ifname: str | None) -> int | None:
    """The port a host's interface is cabled to, from the node's ``ifnames`` attribute."""
    if ifname is None:
        return None
    names = fabric.nodes[node_id].attrs.get("ifnames") or {}
    for port, name in names.items():
        if name == ifname:
            return int(port)
    return None


def align(fabric: Fabric, obs: Observations) -> Observations:
    """Map every record's node (label, GUID, id) and interface onto fabric ids and ports.

    Records about nodes the fabric does not have are dropped and counted in a
    ``ProbeRun`` with status ``error``, so the report says what it ignored.
    """
    unknown: dict[str, int] = {}
    cache: dict[str, str | None] = {}

    def node_of(name: str) -> str | None:
        if name not in cache:
            try:
                cache[name] = fabric.resolve_node(name)
            except TopologyError:
                cache[name] = None
        return cache[name]

    def fix(rec):
        nid = node_of(rec.node)
        if nid is None:
            unknown[rec.node] = unknown.get(rec.node, 0) + 1
            return None
        port = port_for_ifname(fabric, nid, getattr(rec, "ifname", None)) or rec.port
        if nid == rec.node and port == rec.port:
            return rec
        return dataclasses.replace(rec, node=nid, port=port)

    # Host-level records (GPUs, host checks, kernel messages, NCCL transports and error lines, every
    # field not re-mapped below) keep the host's name: their findings map it onto the fabric's nodes.
    out = dataclasses.replace(obs, before=[], after=[], states=[], events=[], pairs=[], groups=[],
                              probes=list(obs.probes), extra=dict(obs.extra))
    for g in obs.groups:  # group tests: every member on the fabric, or the test is dropped like a pair
        members = [node_of(m.node) for m in g.members]
        if any(m is None for m in members):
            for m in g.members:
                if node_of(m.node) is None:
                    unknown[m.node] = unknown.get(m.node, 0) + 1
            continue
        out.groups.append(dataclasses.replace(
            g, members=tuple(PortRef(nid, m.port) for nid, m in zip(members, g.members, strict=True))))
    for name in ("before", "after", "states", "events"):
        setattr(out, name, [r for r in (fix(x) for x in getattr(obs, name)) if r is not None])
    for p in obs.pairs:
        src, dst = node_of(p.src.node), node_of(p.dst.node)
        if src is None or dst is None:
            for n in (p.src.node, p.dst.node):
                if node_of(n) is None:
                    unknown[n] = unknown.get(n, 0) + 1
            continue
        out.pairs.append(dataclasses.replace(
            p, src=p.src._replace(node=src), dst=p.dst._replace(node=dst)))
    for name, count in sorted(unknown.items()):
        out.probes.append(ProbeRun("align", name, "error", 0.0, f"{count} records name a node not in the fabric"))
    return out
