"""Analysis of saved records: align them with a fabric, localize, and build the report.

Records come from ``fabricdoc probe`` on each node, from a saved sweep, or from
nccl-tests logs; their node names may be labels, GUIDs or hostnames and
Ethernet records may name an interface instead of a port number, so each is
mapped onto the fabric's ids first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from fabricdoc.errors import TopologyError
from fabricdoc.localize import Options, localize
from fabricdoc.model import Observations, ProbeRun
from fabricdoc.report import Report
from fabricdoc.topology import Fabric


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

    out = Observations(interval_s=obs.interval_s, probes=list(obs.probes), gpus=list(obs.gpus), extra=dict(obs.extra))
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


def merge(parts: list[Observations]) -> Observations:
    """One Observations from several (counters, states, events, pairs appended in order)."""
    out = Observations()
    for part in parts:
        for name in ("before", "after", "states", "events", "pairs", "probes", "gpus"):
            getattr(out, name).extend(getattr(part, name))
        if part.interval_s is not None:
            out.interval_s = max(out.interval_s or 0.0, part.interval_s)
    return out


def load_records(paths: list[str]) -> Observations:
    """Read files written by ``fabricdoc probe`` (fabricdoc-records JSON)."""
    from fabricdoc.records_io import observations_from_records, records_from_json

    records = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise TopologyError(f"{path}: cannot read records: {exc.strerror}") from None
        records.extend(records_from_json(text, source=path))
    return observations_from_records(records)


def analyze(fabric: Fabric, obs: Observations, options: Options | None = None,
            include_topology: bool = True) -> Report:
    """Localize over aligned observations and build the report."""
    obs = align(fabric, obs)
    options = options or Options()
    findings = localize(fabric, obs, options)
    return Report.build(fabric, findings, obs, include_topology=include_topology, slow_ratio=options.slow_ratio)
