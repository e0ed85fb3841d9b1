"""Saved ``perfquery`` dumps read back as counter samples of a known fabric.

Each file is one sample, taken when the file was last written (its mtime): files are read
in that order, the order given breaking ties. Of each port's samples the first is ``before``
and the last ``after``, as for ``fabricdoc probe`` records; a port sampled once has totals
since its counters were last cleared, and no rate. LIDs are placed on the fabric (a switch's
LID, a CA port's LID; else the node GUID in the file name); a LID the fabric does not have
is not seen, never guessed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from fabricdoc.model.inputs import read_text
from fabricdoc.model.records import Observations, PortCounters, ProbeRun
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.ib.perfquery import PerfqueryDump, guid_in_name, parse_perfquery
from fabricdoc.sources.records import observations_from_records

PROBE = "perfquery"


def lid_nodes(fabric: Fabric) -> dict[int, str]:
    """LID -> node id: a switch's LID (port 0) and every CA port's LID."""
    out = {n.lid: n.id for n in fabric.nodes.values() if n.lid}
    out.update({lid: ref.node for ref, lid in fabric.port_lids.items()})
    return out


def _node_of_guid(fabric: Fabric, guid: str | None) -> str | None:
    """The fabric node a GUID names: its node GUID, or one of a CA's port GUIDs."""
    if not guid:
        return None
    if guid in fabric.nodes:
        return guid
    for node in fabric.nodes.values():
        if guid in (node.attrs.get("port_guids") or {}).values():
            return node.id
    return None


def read_perfquery(paths: Sequence[str | os.PathLike[str]], fabric: Fabric) -> Observations:
    """The counter samples in saved perfquery dumps, placed on ``fabric``, with a ``perfquery``
    ProbeRun for what could not be placed (error: not seen) or was not per-port (``-a``)."""
    read: list[tuple[float, int, str, PerfqueryDump]] = []
    for i, path in enumerate(paths):
        text = read_text(path, "perfquery output")
        read.append(
            (
                os.stat(path).st_mtime,
                i,
                str(path),
                parse_perfquery(text, str(path), guid=guid_in_name(path)),
            )
        )
    ordered = sorted(read, key=lambda r: (r[0], r[1]))
    probes: list[ProbeRun] = []
    if len(read) > 1 and [r[1] for r in ordered] != list(range(len(read))):
        probes.append(
            ProbeRun(
                PROBE,
                "order",
                "warning",
                0.0,
                "samples taken in file-time order, not the order "
                "given: " + ", ".join(r[2] for r in ordered),
            )
        )
    lids = lid_nodes(fabric)
    records: list[PortCounters] = []
    for mtime, _, path, dump in ordered:
        by_name = _node_of_guid(fabric, dump.guid)
        unplaced: dict[int, str] = {}
        for s in dump.samples:
            node = lids.get(s.lid)
            if node is not None and by_name is not None and node != by_name:
                unplaced[s.lid] = (
                    f"LID {s.lid} is {fabric.label(node)} on the fabric but the file name names "
                    f"GUID {dump.guid} ({fabric.label(by_name)}): not placed"
                )
                continue
            node = node or by_name
            if node is None:
                unplaced[s.lid] = (
                    f"LID {s.lid} is not in the fabric given by --fabric: its counters were not analysed"
                )
                continue
            records.append(s.on(node, mtime))
        for lid, why in unplaced.items():
            probes.append(ProbeRun(PROBE, f"{path}: LID {lid}", "error", 0.0, why))
        for a in dump.aggregates:
            probes.append(
                ProbeRun(
                    PROBE,
                    f"{path}: LID {a.lid} port 255",
                    "warning" if dump.samples else "error",
                    0.0,
                    f"line {a.line_no}: every port summed (perfquery -a or port 255), not one port's counters: not "
                    "analysed (perfquery -l LID 255 gives each port)",
                )
            )
        for w in dump.warnings:
            probes.append(
                ProbeRun(PROBE, path, "warning", 0.0, f"line {w.line_no}: {w.text}"[:500])
            )
    obs = observations_from_records(list(records))
    obs.probes.extend(probes)
    return obs
