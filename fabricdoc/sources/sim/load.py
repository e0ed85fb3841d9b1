"""Load-only faults in the simulator: capacity that depends on how many flows meet.

A healthy cable direction shares its rate among its flows (max-min). A
``load_collapse`` cable keeps its full rate while it carries at most ``flows``
concurrent flows in a direction and only ``factor`` of it above (buffers or
credits that run dry at full load); ``incast_pfc`` does that to one switch egress
(the direction toward ``port``) when more than ``flows`` flows converge on it (a
PFC pause storm under incast); ``switch_collapse`` cuts every egress of a switch
when more than ``flows`` flows cross the switch at once (a shared buffer that
collapses); ``switch_throttle`` caps what a switch forwards at ``flows`` flows' worth
of line rate (thermal or power capping at full bisection): above it each egress
keeps ``flows`` over the flows crossing the switch, so each flow's share shrinks as
more meet, where a collapse drops to one fraction at once. A pair round (one flow
per cable direction) never trips any of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fabricdoc.fabric.faults import LOAD_FAULT_KINDS, Fault
from fabricdoc.model.paths import Channel, channel_ends
from fabricdoc.model.topology import Fabric

# Capacity a load-only fault keeps once tripped, unless the fault gives its own ``factor``.
COLLAPSED = 0.3


@dataclass(frozen=True)
class _Rule:
    limit: int  # most concurrent flows at full rate
    factor: float  # capacity fraction above it


class LoadModel:
    """The load-only faults of one simulated fabric, applied to the flows of a round."""

    def __init__(self, fabric: Fabric, faults: Sequence[Fault]) -> None:
        self.channel: dict[Channel, _Rule] = {}  # one cable direction
        self.switch: dict[str, _Rule] = {}
        self.throttle: dict[str, int] = {}  # switch -> flows' worth of line rate it forwards at most
        for f in faults:
            if f.kind not in LOAD_FAULT_KINDS:
                continue
            rule = _Rule(max(1, f.flows), COLLAPSED if f.factor is None else f.factor)
            if f.kind == "switch_collapse":
                self.switch[f.switch] = rule  # type: ignore[index]
                continue
            if f.kind == "switch_throttle":
                self.throttle[f.switch] = rule.limit  # type: ignore[index]
                continue
            key = f.link(fabric)
            if f.kind == "load_collapse":
                self.channel[(key, 0)] = self.channel[(key, 1)] = rule
            else:  # incast_pfc: the direction that ends at ``port`` (the switch's egress toward it)
                end = f.port if f.port is not None else key.b
                self.channel[(key, 0 if end == key.b else 1)] = rule

    def __bool__(self) -> bool:
        return bool(self.channel or self.switch or self.throttle)

    def factors(self, fabric: Fabric, flows: Sequence[Sequence[Channel]]) -> dict[Channel, float]:
        """Capacity factor of every tripped channel, given all flows running at once."""
        load: Counter[Channel] = Counter(h for hops in flows for h in hops)
        out: dict[Channel, float] = {}
        for chan, rule in self.channel.items():
            if load.get(chan, 0) > rule.limit:
                out[chan] = rule.factor
        if self.switch or self.throttle:
            through: Counter[str] = Counter()
            egress: dict[str, list[Channel]] = {}
            for hops in flows:
                seen = set()
                for chan in hops:
                    sender = channel_ends(chan)[0].node
                    seen.add(sender)
                    egress.setdefault(sender, []).append(chan)
                for node in seen:
                    through[node] += 1
            tripped = {sw: rule.factor for sw, rule in self.switch.items() if through.get(sw, 0) > rule.limit}
            tripped.update({sw: limit / through[sw] for sw, limit in self.throttle.items()
                            if through.get(sw, 0) > limit})
            for sw, factor in tripped.items():
                for chan in egress.get(sw, []):
                    out[chan] = min(out.get(chan, 1.0), factor)
        return out
