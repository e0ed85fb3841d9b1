"""What a link should train at is min(supported, enabled) of both its ends (ibdiagnet PORTS:
LinkWidthSup/LinkWidthEn, LinkSpeedSup/LinkSpeedEn). A link trained below that is degraded; a
port an admin limited (enabled below supported) trained at what it may and is not.

Every case is the real NDR capture (tests/data/ibdiagnet2/real_gary_sequoia_ndr_2025-03-31) with
a few PORTS fields of two switch-to-switch cables changed."""

from __future__ import annotations

import csv
import io
import shutil
import time
from pathlib import Path

import pytest
from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.ib import ibdiagnet as diag
from fabricdoc.probes.ib.runner import IbRunner, ToolRun

from fabricdoc.analysis.localize import localize
from fabricdoc.errors import ProbeError
from fabricdoc.fabric.infiniband import expect_from_ports
from fabricdoc.model.evidence import StateEvidence
from fabricdoc.model.ib import IB_SPEEDS, IbPortState
from fabricdoc.model.records import Observations, PortRef
from fabricdoc.sources.ibdiagnet import read_ibdiagnet_dir
from fabricdoc.sources.infiniband import expected_fabric, judge_states
from tests.helpers.ib import captured
from tests.helpers.paths import DATA

SAMPLE = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
HDR, NDR = IB_SPEEDS["HDR"], IB_SPEEDS["NDR"]
# PortInfo codes: LinkWidth 1 = 1x, 2 = 4x; LinkSpeed 0x400 = HDR (extended byte), 0x800 = NDR.
W1X, SPEED_HDR = 1, 0x400


def _section(lines: list[str], name: str) -> tuple[int, list[str]]:
    start = lines.index(f"START_{name}\n")
    return start, next(csv.reader([lines[start + 1]]))


def _row(fields: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(fields)
    return out.getvalue()


def switch_links(lines: list[str]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """The capture's cables between two switches, as ((guid, port), (guid, port))."""
    start, header = _section(lines, "NODES")
    switches = set()
    for line in lines[start + 2:lines.index("END_NODES\n")]:
        row = dict(zip(header, next(csv.reader([line])), strict=True))
        if row["NodeType"] == "2":
            switches.add(row["NodeGUID"])
    start, header = _section(lines, "LINKS")
    out = []
    for line in lines[start + 2:lines.index("END_LINKS\n")]:
        r = dict(zip(header, next(csv.reader([line])), strict=True))
        if r["NodeGuid1"] in switches and r["NodeGuid2"] in switches:
            out.append(((r["NodeGuid1"], int(r["PortNum1"])), (r["NodeGuid2"], int(r["PortNum2"]))))
    return out


def edit_ports(lines: list[str], changes: dict[tuple[str, int], dict[str, int]]) -> list[str]:
    """``lines`` with the PORTS fields of the given (node GUID, port) rows set."""
    start, header = _section(lines, "PORTS")
    out = list(lines)
    done = set()
    for at in range(start + 2, lines.index("END_PORTS\n")):
        fields = next(csv.reader([lines[at]]))
        key = (fields[header.index("NodeGuid")], int(fields[header.index("PortNum")]))
        if key in changes:
            for column, value in changes[key].items():
                fields[header.index(column)] = str(value)
            out[at] = _row(fields)
            done.add(key)
    assert done == set(changes)
    return out


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """The real run, with cable ``low`` trained at 1X (both ends support and enable 4X) and cable
    ``limited`` trained at 1X where one end has only 1X enabled; ``slow`` trained at HDR on NDR ports,
    ``capped`` at HDR where one end has only HDR enabled."""
    lines = (SAMPLE / "ibdiagnet2.db_csv").read_text(encoding="utf-8").splitlines(keepends=True)
    links = switch_links(lines)
    assert len(links) >= 4
    low, limited, slow, capped = links[:4]
    changes: dict[tuple[str, int], dict[str, int]] = {}
    for end in (*low, *limited):
        changes[end] = {"LinkWidthActv": W1X}
    changes[limited[1]]["LinkWidthEn"] = W1X
    for end in (*slow, *capped):
        changes[end] = {"LinkSpeedActv": SPEED_HDR}
    changes[capped[0]]["LinkSpeedEn"] = SPEED_HDR
    run = tmp_path_factory.mktemp("ibdiagnet") / "run"
    shutil.copytree(SAMPLE, run)
    (run / "ibdiagnet2.db_csv").write_text("".join(edit_ports(lines, changes)), encoding="utf-8")
    return run, {"low": low, "limited": limited, "slow": slow, "capped": capped}


def _faults(findings, ends) -> set[str]:
    """The faults of the findings on this cable (its component names both ends: ``guid/port~guid/port``)."""
    wanted = {f"{guid}/{port}" for guid, port in ends}
    return {f.fault for f in findings if wanted <= set(f.component.split("~"))}


def test_ports_rows_carry_the_enabled_width_and_speed_as_the_real_header_names_them(capture):
    run, links = capture
    db = diag.parse_db_csv((run / "ibdiagnet2.db_csv").read_text(encoding="utf-8"), "db_csv")
    section = db.get("PORTS")
    assert section is not None and {"LinkWidthEn", "LinkSpeedEn"} <= set(section.header)
    ports = {(p.node_guid, p.port): p for p in diag.db_ports(db)}
    limited_far = ports[links["limited"][1]]
    assert (limited_far.max_lanes, limited_far.enabled_lanes, limited_far.lanes) == (4, 1, 1)
    capped_near = ports[links["capped"][0]]
    assert (capped_near.max_speed, capped_near.enabled_speed, capped_near.speed) == ("NDR", "HDR", "HDR")
    untouched = ports[links["low"][0]]
    assert (untouched.max_lanes, untouched.enabled_lanes) == (4, 4)


def test_analyze_ibdiagnet_flags_a_link_below_both_ends_enabled_and_supported_but_not_an_admin_limited_one(capture):
    run, links = capture
    read = read_ibdiagnet_dir(run)
    findings = localize(read.fabric, read.observations)
    assert "width_degraded" in _faults(findings, links["low"])
    assert "speed_degraded" in _faults(findings, links["slow"])
    assert not _faults(findings, links["limited"]) & {"width_degraded", "speed_degraded"}
    assert not _faults(findings, links["capped"]) & {"width_degraded", "speed_degraded"}
    states = {(s.node, s.port): s for s in read.observations.states}
    low, limited = states[links["low"][0]], states[links["limited"][0]]
    assert (low.lanes, low.max_lanes, low.max_lanes_from) == (1, 4, "supported")
    assert (limited.lanes, limited.max_lanes, limited.max_lanes_from) == (1, 1, "enabled")
    capped = states[links["capped"][1]]
    assert (capped.lane_gbps, capped.max_lane_gbps, capped.max_lane_gbps_from) == (HDR, HDR, "enabled")
    evidence = [e for f in findings for e in f.evidence if isinstance(e, StateEvidence) and e.lanes == 1]
    assert evidence and {e.expected_from for e in evidence} == {"supported"}


def _live(states, lanes: int | None = None, gbps: float | None = None) -> list[IbPortState]:
    """The same ports as a live iblinkinfo reads them, hinting "Could be 12X" and the trained speed."""
    return [IbPortState(s.node, s.port, s.state, s.phys_state, lanes or s.lanes, gbps or s.lane_gbps, 12,
                        gbps or s.lane_gbps, s.peer, "iblinkinfo", max_lanes_from="could_be",
                        max_lane_gbps_from="could_be") for s in states]


def test_a_live_sweep_against_an_ibdiagnet_run_judges_links_by_its_ports_enabled_and_supported(capture):
    run, links = capture
    read = read_ibdiagnet_dir(run)
    trained = {(s.node, s.port): s for s in read.observations.states}
    judged = {(s.node, s.port): s for s in judge_states(_live(trained.values()), read.fabric, topology_given=True)}
    for name, lanes, since in (("low", 4, "supported"), ("limited", 1, "enabled")):
        s = judged[links[name][0]]
        assert (s.lanes, s.max_lanes, s.max_lanes_from) == (1, lanes, since)
    findings = localize(read.fabric, Observations(states=list(judged.values())))
    assert "width_degraded" in _faults(findings, links["low"])
    assert not _faults(findings, links["limited"]) & {"width_degraded", "speed_degraded"}


def test_enabled_lowers_the_expectation_only_where_it_is_below_supported(capture):
    run, links = capture
    read = read_ibdiagnet_dir(run)
    ports = diag.db_ports(diag.parse_db_csv((run / "ibdiagnet2.db_csv").read_text(encoding="utf-8"), "db_csv"))
    live = _live(read.observations.states, lanes=4, gbps=NDR)
    judged = {(s.node, s.port): s for s in expect_from_ports(live, ports)}
    assert (judged[links["low"][0]].max_lanes, judged[links["low"][0]].max_lanes_from) == (4, "supported")
    assert (judged[links["limited"][0]].max_lanes, judged[links["limited"][0]].max_lanes_from) == (1, "enabled")
    everything = {(p.node_guid, p.port): p for p in ports}
    unknown = [p if (p.node_guid, p.port) != links["limited"][1] else
               type(p)(**{**p.__dict__, "enabled_lanes": None}) for p in everything.values()]
    again = {(s.node, s.port): s for s in expect_from_ports(live, unknown)}
    assert (again[links["limited"][0]].max_lanes, again[links["limited"][0]].max_lanes_from) == (4, "supported")


def test_a_ports_section_without_enabled_columns_still_reads(capture):
    run, _ = capture
    lines = (SAMPLE / "ibdiagnet2.db_csv").read_text(encoding="utf-8").splitlines(keepends=True)
    start, header = _section(lines, "PORTS")
    drop = [header.index("LinkWidthEn"), header.index("LinkSpeedEn")]
    for at in range(start + 1, lines.index("END_PORTS\n")):
        fields = next(csv.reader([lines[at]]))
        lines[at] = _row([f for i, f in enumerate(fields) if i not in drop])
    ports = diag.db_ports(diag.parse_db_csv("".join(lines), str(Path("db_csv"))))
    assert ports and {(p.enabled_lanes, p.enabled_speed) for p in ports} == {(None, None)}
    assert {p.max_lanes for p in ports if p.state == "Active" and p.port} == {4}


class _OnlyDiscovery(IbRunner):
    """This host's tools as a stand-in: ibnetdiscover replays a capture, every other tool fails."""

    def __init__(self) -> None:
        super().__init__(env={"PATH": "/nonexistent"})

    def run(self, tool, *args, ok_codes=(0,), timeout_s=None):  # noqa: ARG002 - same signature as IbRunner.run
        if tool != "ibnetdiscover":
            raise ProbeError(tool, "not on this host")
        run = ToolRun(tool, (tool, *args), captured("ibnetdiscover", "healthy"), "", 0, 0.001, time.monotonic())
        self.runs.append(run)
        return run


def test_a_sweep_takes_an_ibdiagnet_output_directory_as_its_expected_fabric(capture):
    run, links = capture
    fabric = expected_fabric(_OnlyDiscovery(), HealthRecorder(), run)
    read = read_ibdiagnet_dir(run)
    assert fabric.source == read.fabric.source and set(fabric.nodes) == set(read.fabric.nodes)
    limited = fabric.link_at(PortRef(*links["limited"][0]))
    assert limited is not None and (limited.lanes, limited.max_lanes) == (1, 1)  # its enabled width, not 4X
