"""Coverage: what a sweep planned to see, what it saw, and what it could not see and why.

A report may say ``pass`` only when everything planned was seen. What counts as
planned depends on the source (the sweep says it in :class:`Planned`): the ports
whose counters should be sampled twice, the hosts to probe, the bandwidth tests.
A probe that ended in ``error`` or ``timeout`` is something not seen; one that is
``unsupported`` (no GPU, no RDMA device) had nothing to see and is not counted.
A bandwidth test that could not run is "not tested", never a hardware fault.
A host configuration check that applies but could not be read (``unknown``) is not
seen; one with nothing to check (``n/a``: no GPU, no NUMA nodes) is not counted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fabricdoc.errors import TopologyError
from fabricdoc.model.groups import LOADED_FLOWS, filled_flows, most_flows
from fabricdoc.model.paths import FINISHED, finished_crossed
from fabricdoc.model.records import Observations, PortRef, ProbeStatus
from fabricdoc.model.topology import Fabric

NOT_SEEN_SHOWN = 200  # items kept in a report; the count says how many there were
UNTESTED_SHOWN = 20  # untested cables named in a report; the count says how many there were
BLIND = (ProbeStatus.ERROR, ProbeStatus.TIMEOUT)


@dataclass
class Planned:
    """What a sweep set out to see. ``None`` means "not part of this sweep"."""

    ports: set[PortRef] | None = None  # counters sampled twice (deltas and rates)
    hosts: set[str] | None = None  # fabric node ids of hosts that should report (probes, records)
    tests: int | None = None  # bandwidth tests planned (sweep and re-test rounds)
    logs: int | None = None  # nccl-tests logs found
    group_load: bool = False  # group tests were to load every switch and switch cable (--groups)
    isolation_left: int = 0  # failing groups isolation had not finished when its round cap stopped it
    groups_unexplained: int = 0  # failing group tests no named part explains (and no run again cleared)


@dataclass
class Coverage:
    """Seen against planned, and one line per thing not seen."""

    ports_planned: int | None = None
    ports_sampled: int | None = None
    hosts_planned: int | None = None
    hosts_seen: int | None = None
    tests_planned: int | None = None
    tests_measured: int | None = None
    not_seen: list[dict[str, str]] = field(default_factory=list)
    not_seen_count: int = 0
    group_load: dict[str, int] | None = None  # cable class -> most concurrent flows group tests reached
    # Up cables no finished bandwidth test crossed (no route of the tests crosses them, or their tests could
    # not run): said, not counted as unseen (a cable no route uses carries no job's traffic either).
    cables_untested: int | None = None
    cables_untested_shown: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.not_seen_count == 0

    def add(self, what: str, why: str) -> None:
        self.not_seen_count += 1
        if len(self.not_seen) < NOT_SEEN_SHOWN:
            self.not_seen.append({"what": what, "why": why})

    def to_dict(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "ports": {"planned": self.ports_planned, "sampled": self.ports_sampled},
            "hosts": {"planned": self.hosts_planned, "seen": self.hosts_seen},
            "tests": {"planned": self.tests_planned, "measured": self.tests_measured},
            "not_seen": list(self.not_seen),
            "not_seen_count": self.not_seen_count,
            **({"group_load": dict(self.group_load)} if self.group_load is not None else {}),
            **({"cables": {"untested": self.cables_untested, "untested_shown": list(self.cables_untested_shown)}}
               if self.cables_untested is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Coverage:
        ports, hosts, tests = d.get("ports", {}), d.get("hosts", {}), d.get("tests", {})
        cables = d.get("cables") or {}
        return cls(ports.get("planned"), ports.get("sampled"), hosts.get("planned"), hosts.get("seen"),
                   tests.get("planned"), tests.get("measured"), list(d.get("not_seen", [])),
                   int(d.get("not_seen_count", len(d.get("not_seen", [])))), d.get("group_load"),
                   cables.get("untested"), list(cables.get("untested_shown") or []))


def _sampled_twice(obs: Observations) -> set[PortRef]:
    first = {(c.node, c.port) for c in obs.before}
    return {PortRef(c.node, c.port) for c in obs.after if (c.node, c.port) in first}


def _stray_ports(fabric: Fabric, obs: Observations) -> list[PortRef]:
    """Ports of the fabric's nodes that records name past the node's port count (port 0, a switch's
    management port, is a real port)."""
    refs = {(r.node, r.port) for r in (*obs.before, *obs.after, *obs.states, *obs.events)}
    return sorted(PortRef(n, p) for n, p in refs if n in fabric.nodes and p > fabric.nodes[n].num_ports)


def measure(fabric: Fabric, obs: Observations, planned: Planned) -> Coverage:
    """The coverage of ``obs`` against ``planned`` on ``fabric``."""
    cov = Coverage()
    for run in obs.probes:
        if run.status in BLIND:
            cov.add(f"{run.probe} on {run.target}", f"{run.status}: {run.error or 'no detail'}")
    for ref in _stray_ports(fabric, obs):
        node = fabric.nodes[ref.node]
        cov.add(f"records of {fabric.label(ref.node)}[{ref.port}]",
                f"the fabric's {node.kind} has ports 1..{node.num_ports}: records of a port it does not have "
                "were not analysed")
    for c in obs.host_checks:
        if c.status == "unknown":
            cov.add(f"host check {c.check} on {fabric.label(c.node)} {c.subject}", f"could not read: {c.reason}")
    if planned.ports is not None:
        twice = _sampled_twice(obs)
        cov.ports_planned = len(planned.ports)
        cov.ports_sampled = len(planned.ports & twice)
        missing = sorted(planned.ports - twice)
        if twice and obs.interval_s is not None and obs.interval_s <= 0:
            cov.add("counter rates", "the two counter samples are 0 s apart: no rate can be told, so the "
                    "rate rules could not judge")
        if missing and not obs.before:
            cov.add("counter deltas", f"each of {len(missing)} ports was sampled once (a second sample gives the "
                    "deltas: fabricdoc probe --watch S, or --interval S)")
        else:
            for ref in missing[:NOT_SEEN_SHOWN]:
                cov.add(f"counters of {fabric.label(ref.node)}[{ref.port}]", "not sampled twice")
            cov.not_seen_count += max(0, len(missing) - NOT_SEEN_SHOWN)
    if planned.hosts is not None:
        seen = {c.node for c in (*obs.after, *obs.before)} | {s.node for s in obs.states}
        cov.hosts_planned = len(planned.hosts)
        cov.hosts_seen = len(planned.hosts & seen)
        for host in sorted(planned.hosts - seen):
            cov.add(f"host {fabric.label(host)}", "no records from it")
    if planned.tests is not None:
        cov.tests_planned = planned.tests
        cov.tests_measured = sum(1 for p in obs.pairs if p.status != "error")
        for p in obs.pairs:
            if p.status == "error":
                cov.add(f"test {fabric.label(p.src.node)}[{p.src.port}] -> {fabric.label(p.dst.node)}[{p.dst.port}]",
                        f"could not run: {p.error or 'no detail'}")
        short = planned.tests - len(obs.pairs)
        if short > 0:
            cov.add(f"{short} planned bandwidth tests", "not run")
    if any(p.status in FINISHED for p in obs.pairs):
        _untested_cables(fabric, obs, cov)
    if planned.group_load:
        _group_coverage(fabric, obs, cov)
    if planned.isolation_left:
        cov.add(f"isolation of {planned.isolation_left} failing group tests",
                "stopped by its round cap before it named the part: re-run with --groups on those hosts")
    if planned.groups_unexplained:
        cov.add(f"{planned.groups_unexplained} failing group tests",
                "slower under load than healthy groups reach and no part named explains them (isolation "
                "could not single one out): the report's groups list them; re-run with --groups")
    return cov




def _untested_cables(fabric: Fabric, obs: Observations, cov: Coverage) -> None:
    """Count the up cables no finished bandwidth test crossed, and name the first few."""
    crossed = finished_crossed(fabric, obs.pairs)
    untested = sorted((k for k, link in fabric.links.items() if link.state == "up" and k not in crossed), key=str)
    cov.cables_untested = len(untested)
    cov.cables_untested_shown = [f"{fabric.label(k.a.node)}[{k.a.port}] -- {fabric.label(k.b.node)}[{k.b.port}]"
                                 for k in untested[:UNTESTED_SHOWN]]


def cable_class(a: str, b: str, levels: dict[str, int]) -> str:
    """``host-L1``, ``L1-L2``, ``L2-L3``...: a cable's class by the levels of its ends (hosts are 0)."""
    lo, hi = sorted((levels.get(a, 0), levels.get(b, 0)))
    return f"{'host' if lo == 0 else f'L{lo}'}-L{hi}"


def _group_coverage(fabric: Fabric, obs: Observations, cov: Coverage) -> None:
    """What the group tests loaded: per cable direction the most flows one round put on it at once.
    A switch cable some test crossed (pair or group: a route uses it) that never carried
    :data:`LOADED_FLOWS` flows at once was never loaded, so a fault that shows only under load (a buffer,
    a cable that collapses above k flows) could hide there: said as not seen, so the verdict cannot be
    pass. Records, per cable class, the most flows reached."""
    per_round: dict[int, list[tuple[tuple[PortRef, ...], str]]] = defaultdict(list)
    for g in obs.groups:
        if g.status != "error":  # one that could not run loaded nothing
            per_round[g.round].append((g.members, g.test))
    most = most_flows(fabric, per_round.values())
    filled = filled_flows(fabric, per_round.values())
    crossed = {key for key, _ in most}
    for p in obs.pairs:
        try:
            crossed.update(fabric.path(p.src, p.dst))
        except TopologyError:
            continue
    levels = fabric.levels()
    reached: dict[str, int] = {}
    unloaded = []
    unfilled = []
    for key, link in sorted(fabric.links.items(), key=lambda kv: str(kv[0])):
        cls = cable_class(key.a.node, key.b.node, levels)
        flows = max(most[(key, 0)], most[(key, 1)])
        reached[cls] = max(reached.get(cls, 0), flows)
        if link.state == "up" and not cls.startswith("host") and key in crossed and flows < LOADED_FLOWS:
            unloaded.append((key, flows))
        elif (link.state == "up" and cls.startswith("host") and key in crossed
              and max(filled[(key, 0)], filled[(key, 1)]) < LOADED_FLOWS):
            # A host port: many flows held back elsewhere (an all-hosts alltoall at its spines) pass one
            # that collapses under an incast; only a round that filled it shows it carries them.
            unfilled.append((key, max(filled[(key, 0)], filled[(key, 1)])))
    cov.group_load = dict(sorted(reached.items()))
    for key, flows in unloaded[:NOT_SEEN_SHOWN]:
        cov.add(f"group load on cable {fabric.label(key.a.node)}[{key.a.port}] -- {fabric.label(key.b.node)}"
                f"[{key.b.port}]", f"no group test put {LOADED_FLOWS} flows on it at once "
                f"(most: {flows}): a fault that shows only under load would not show there")
    cov.not_seen_count += max(0, len(unloaded) - NOT_SEEN_SHOWN)
    grouped = {p for g in obs.groups for p in g.members}
    for key, flows in unfilled[:NOT_SEEN_SHOWN]:
        cable = f"{fabric.label(key.a.node)}[{key.a.port}] -- {fabric.label(key.b.node)}[{key.b.port}]"
        if not {key.a, key.b} & grouped:
            cov.add(f"group load on host cable {cable}", "its host ran in no group test (hosts behind a cable "
                    "the pair tests named sit them out): an incast into the port would not show")
            continue
        cov.add(f"group load on host cable {cable}", f"no group test filled it with {LOADED_FLOWS} flows "
                f"at once (most: {flows}): an incast into the port would not show (rings put one flow on each; "
                "--group-test alltoall or fan fills host ports)")
    cov.not_seen_count += max(0, len(unfilled) - NOT_SEEN_SHOWN)


def host_ports(fabric: Fabric, hosts: Iterable[str] | None = None) -> set[PortRef]:
    """The cabled ports of ``hosts`` (default every host): what host probes sample."""
    names = set(hosts) if hosts is not None else None
    return {p for p in fabric.host_ports() if names is None or p.node in names}


def cabled_ports(fabric: Fabric) -> set[PortRef]:
    """Both ends of every cable that is up: what a whole-fabric counter scan samples."""
    return {end for key, link in fabric.links.items() if link.state == "up" for end in (key.a, key.b)}
