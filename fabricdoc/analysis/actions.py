"""What to do about each finding: the most specific matching action rule of the fault registry
(``fabricdoc/model/faults.toml``; rules are data).

A rule matches on the finding's fault (or ``*``), and optionally its kind, its
severity and whether its cable joins two switches (routing can avoid it) or
reaches a host (only a drain avoids it). :func:`attach_actions` is applied once,
in :meth:`fabricdoc.report.report.Report.build`, which every path (sweep,
analyze, runtime) goes through.
"""

from __future__ import annotations

from collections.abc import Iterable

from fabricdoc.errors import TopologyError
from fabricdoc.model.faults import ActionRule, registry
from fabricdoc.model.findings import Action, Finding
from fabricdoc.model.topology import Fabric


def cable_ends(fabric: Fabric | None, finding: Finding) -> str | None:
    """``switches`` when a link finding's cable joins two switches, ``host`` when one end is a host,
    None when the finding names no cable or the fabric cannot place it."""
    if fabric is None or finding.kind != "link" or not finding.endpoints or len(finding.endpoints) != 2:
        return None
    try:
        kinds = {fabric.nodes[fabric.resolve_port(str(label), int(port)).node].kind
                 for label, port in finding.endpoints}
    except (TopologyError, KeyError):
        return None
    return "switches" if kinds == {"switch"} else "host"


def action_for(finding: Finding, fabric: Fabric | None = None,
               rules: tuple[ActionRule, ...] | None = None) -> Action | None:
    """The action of the most specific rule ``finding`` matches, the earlier on a tie (None when no rule
    does); ``rules`` default to the fault registry's (:mod:`fabricdoc.model.faults`)."""
    ends = cable_ends(fabric, finding)
    best: ActionRule | None = None
    for r in registry().action_rules() if rules is None else rules:
        if r.matches(finding, ends) and (best is None or r.specificity > best.specificity):
            best = r
    return None if best is None else best.action


def attach_actions(findings: Iterable[Finding], fabric: Fabric | None = None,
                   rules: tuple[ActionRule, ...] | None = None) -> list[Finding]:
    """The findings, each given its action in place (an action already set is kept)."""
    out = list(findings)
    for f in out:
        if f.action is None:
            f.action = action_for(f, fabric, rules)
    return out
