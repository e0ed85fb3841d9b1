"""Routes after ports are taken out of service, as the fabric would recompute them.

Two engines:

- ``minhop``: a fabric whose forwarding tables were read from the switches
  (OpenSM's LFTs) gets new tables over the live links, each destination LID sent
  to a port one hop closer, spread by LID, as OpenSM's minhop engine does after a
  port goes down (the simulator's subnet manager, one definition).
- ``updn``: a fabric without tables (generated, or Ethernet) routes up/down over
  switch levels, D-mod-K (OpenSM's updn/ftree on a fat tree); on Ethernet the
  same live up/down shortest paths are ECMP's choices and the destination picks one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabricdoc.errors import TopologyError
from fabricdoc.impact.effects import restated
from fabricdoc.model.records import LinkKey
from fabricdoc.model.topology import Fabric

ENGINES = ("minhop", "updn")
ENGINE_WORDS = {
    "minhop": "minhop (OpenSM forwarding tables recomputed over the live links)",
    "updn": "up/down (ftree/updn on InfiniBand, ECMP over the live shortest paths on Ethernet)",
}


def engine_of(fabric: Fabric) -> str:
    """The engine that reroutes ``fabric``: ``minhop`` when it carries forwarding tables, else ``updn``."""
    return "minhop" if fabric.lfts else "updn"


def rerouted(fabric: Fabric, down: set[LinkKey], engine: str | None = None) -> Fabric:
    """A copy of ``fabric`` with exactly the ``down`` links down and routes recomputed by ``engine``."""
    engine = engine or engine_of(fabric)
    if engine not in ENGINES:
        raise TopologyError(f"unknown routing engine {engine!r} (one of {', '.join(ENGINES)})")
    out = restated(fabric, down)
    if engine == "minhop" and fabric.lfts:
        from fabricdoc.sources.sim.simulator import rerouted_lfts

        out.lfts = rerouted_lfts(out)
    else:
        out.lfts = {}
    return out


def resolve_link(fabric: Fabric, spec: Any) -> LinkKey:
    """A cable named by a LinkKey, ``[[node, port], [node, port]]`` or one ``[node, port]`` end
    (node ids, labels or GUIDs); TopologyError if the fabric has no such cable."""
    if isinstance(spec, LinkKey):
        if spec not in fabric.links:
            raise TopologyError(f"no link {spec} in fabric {fabric.name!r}")
        return spec
    ends = list(spec)
    if len(ends) == 2 and not isinstance(ends[0], list | tuple):
        ends = [ends]
    link = fabric.link_at(fabric.resolve_port(str(ends[0][0]), int(ends[0][1])))
    if link is None:
        raise TopologyError(f"port {ends[0][0]}[{ends[0][1]}] has no cable")
    if len(ends) > 1:
        far = fabric.resolve_port(str(ends[1][0]), int(ends[1][1]))
        if link.key.other(fabric.resolve_port(str(ends[0][0]), int(ends[0][1]))) != far:
            raise TopologyError(f"{ends[0][0]}[{ends[0][1]}] is not cabled to {ends[1][0]}[{ends[1][1]}]")
    return link.key


def link_names(fabric: Fabric, keys: Iterable[LinkKey]) -> list[list[list[Any]]]:
    """``[[label, port], [label, port]]`` of each cable, as the report names links."""
    return [[[fabric.label(k.a.node), k.a.port], [fabric.label(k.b.node), k.b.port]] for k in keys]
