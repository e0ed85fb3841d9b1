"""The targeted re-test round: each suspect cable tested again over different paths, with controls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from fabricdoc.bandwidth.builder import PlanBuilder, Test
from fabricdoc.bandwidth.plan import Plan
from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey
from fabricdoc.model.topology import Fabric


def retest_plan(
    fabric: Fabric,
    suspects: list[LinkKey],
    *,
    per_suspect: int = 3,
    controls: int = 2,
    bidirectional: bool = False,
    tries: int = 800,
    seed: int = 1,
    avoid: Iterable[LinkKey] = (),
    skip_hosts: Iterable[str] = (),
) -> Plan:
    """A targeted round: re-test each suspect cable over several different paths.

    For every suspect, ``per_suspect`` tests through it whose other cables
    differ from each other (so a slow result points at the shared suspect; the one test
    twice where only one crosses it) and
    ``controls`` tests that start or end next to it but avoid every suspect
    (so its neighbours are shown healthy). Tests route around the known faults
    where they can: the links in ``avoid`` and the links the fabric shows trained
    below their width or speed (a test through one runs at its rate and hides the
    suspect). Tests are packed into as few rounds as the per-direction rule allows.
    """
    mark = fabric.routes_cached()
    b = PlanBuilder(fabric, bidirectional, seed)
    suspect_set = set(suspects)
    skip = set(skip_hosts)

    def skipped(test: Test) -> bool:
        return test[0].node in skip or test[1].node in skip

    known = set(avoid) | {k for k, lk in fabric.links.items()
                          if lk.state == "up" and lk.capacity_gbps < lk.nominal_gbps * 0.99}
    targets: dict[Test, LinkKey | None] = {}
    for link in suspects:
        if link not in fabric.links:
            raise TopologyError(f"retest: {link} is not a cable of fabric {fabric.name!r}")
        chosen: list[Test] = []
        seen_links: set[LinkKey] = set()
        around = known - {link}
        # Around the known faults first (over different paths, then over any), through them only
        # when no other path carries enough tests: a test through one runs at its rate.
        for clear, diverse in ((True, True), (True, False), (False, True)) if around else ((False, True),):
            for test in b.through(link, tries):
                others = b.links(test) - {link}
                if (clear and others & around) or test in targets or (diverse and others & seen_links) or skipped(test):
                    continue
                chosen.append(test)
                seen_links |= others
                b.place(test)
                targets[test] = link
                if len(chosen) >= per_suspect:
                    break
            if len(chosen) >= per_suspect:
                break
        if len(chosen) == 1 and per_suspect > 1:
            # One test alone crosses it (a host's only route): run it again, a transient outlier does not repeat.
            b.place(chosen[0])
        found = 0
        for _ in range(tries):
            if found >= controls:
                break
            near = [p for end in (link.a, link.b) for p in b.under_switch.get(end.node, []) if p.node not in skip]
            near += [end for end in (link.a, link.b) if fabric.nodes[end.node].kind == "host" and end.node not in skip]
            if not near:
                break
            src, dst = b.rng.choice(near), b.rng.choice(b.ports)
            if b.rng.random() < 0.5:
                src, dst = dst, src
            test = (src, dst)
            if not b.ok_pair(src, dst) or b.links(test) & suspect_set or not b.links(test) or skipped(test):
                continue
            b.place(test)
            targets[test] = None
            found += 1
    fabric.clear_route_cache(since=mark)  # the candidates' routes go with the plan; earlier ones stay
    ports = b.ports
    reachable = {k for k, link in fabric.links.items() if link.state == "up"}
    return Plan(
        fabric_name=fabric.name,
        rounds=[t for t in b.rounds if t],
        bidirectional=bidirectional,
        min_cover=per_suspect,
        coverage={k: b.cover[k] for k in sorted(reachable, key=str)},
        hosts=len({p.node for p in ports}),
        ports_per_host=max(Counter(p.node for p in ports).values()),
        ambiguous=0,
        purpose="retest",
        targets=targets,
    )
