"""Reports built the way the sweep builds them, for the scheduler and report tests."""

from __future__ import annotations

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.impact.records import ImpactSection
from fabricdoc.model.evidence import StateEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations
from fabricdoc.report.report import Report

SLURM_NODES = ("fdsl-node0001", "fdsl-node0002", "fdsl-node0003", "fdsl-node0004")
# The generated fabric names hosts node0001..; this rule maps them to the Slurm names.
HOST_RULE = ("node(\\d+)", "fdsl-node\\1")


def nic_down(host: str, fid: str = "") -> Finding:
    """A down NIC; its id derived from its key (as localize gives it) unless ``fid`` is given."""
    return Finding(
        id=fid,
        kind="nic",
        name=f"{host} mlx5_0",
        fault="down",
        severity="error",
        confidence=0.95,
        evidence=[StateEvidence(node=f"{host} mlx5_0", port=1, state="Down", phys_state="Polling", source="iblinkinfo")],
        endpoints=None,
        node_ids=[host],
    )


def make_report(bad_hosts=(), findings=(), fabric=None, impact=None) -> Report:
    """A report over a 4-host leaf/spine fabric with the given hosts' NICs down; ``impact`` as the report
    JSON's impact object, read as a saved report is."""
    fabric = fabric or fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    fs = [nic_down(h) for h in bad_hosts] + list(findings)
    rep = Report.build(fabric, fs, Observations())
    rep.impact = None if impact is None else ImpactSection.from_dict(impact)
    return rep


def store(db, report: Report, counters=(), events=()) -> int:
    """Append one sweep to the history store at ``db``, as ``sweep --history`` does."""
    from fabricdoc.report.history import History

    with History(db) as h:
        return h.append(report, counters, events)
