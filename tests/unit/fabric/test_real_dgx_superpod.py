"""A whole real DGX H100 SuperPOD ibnetdiscover capture, end to end: hosts of several HCAs as rails,
NDR link rates, nccl-tests logs per rail, and the drain naming the host whose rail is bad.

The capture is NVIDIA/topograph's tests/output/ibnetdiscover/example.out, whole and byte-exact
(tests/data/ibnetdiscover/real_topograph_dgx_h100_superpod_ndr_closed/README.md), so it is read
strictly. Expected values are counted from its text here, not written in. The nccl-tests logs are
the real ones of tests/data/nccl/real/ put on this fabric's hosts (host names and GPU ordinal
replaced); the bad rail's log is the same log with its bandwidth scaled by
tests/data/nccl/make_slow_link.py's ``scaled`` (x0.35), as the slow_link set is made.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from fabricdoc.analysis.localize import Options, localize
from fabricdoc.fabric.identity import host_index, host_nodes, host_rails, unnamed
from fabricdoc.report.coverage import Planned, measure
from fabricdoc.report.drain import drain_list
from fabricdoc.sources.infiniband import read_ibnetdiscover_file
from fabricdoc.sources.nccl_logs import observations_from_nccl_logs
from tests.data.nccl.make_slow_link import scaled
from tests.helpers.cli import run_fabricdoc
from tests.helpers.paths import DATA

CAPTURE = DATA / "ibnetdiscover" / "real_topograph_dgx_h100_superpod_ndr_closed" / "example.out"
DRANET = DATA / "nccl" / "real" / "all_reduce_2x1_h200_dranet.log"
A3MEGA = DATA / "nccl" / "real" / "all_reduce_2x8_h100_a3mega.log"
DRANET_HOSTS = ("nccl-test-dranet-1gpu-1nic-worker-0", "nccl-test-dranet-1gpu-1nic-worker-1")
A3MEGA_HOSTS = ("ztan-mig-235z", "ztan-mig-gq73")
UNIT4 = tuple(f"a08-p1-dgx-04-c0{i}" for i in range(1, 5))  # one scalable unit: '<host> mlx5_0/1/4/5'
_CA = re.compile(r'^Ca\s+\d+\s+"[^"]*"\s+#\s+"(?P<desc>[^"]*)"', re.M)
_HOST_HCA = re.compile(r"^(?P<host>[A-Za-z0-9][\w.-]*) (?P<dev>mlx5_\d+|HCA-\d+)$")


@pytest.fixture(scope="module")
def text():
    return CAPTURE.read_text()


@pytest.fixture(scope="module")
def fabric():
    saved = read_ibnetdiscover_file(CAPTURE)  # strict: the whole file, nothing cut off
    return saved.fabric


def _named_hcas(text: str) -> dict[str, list[str]]:
    """host -> its HCA devices, from the Ca blocks' '<host> <device>' descriptions ('localhost' is a default)."""
    out: dict[str, list[str]] = {}
    for m in _CA.finditer(text):
        if (hm := _HOST_HCA.match(m["desc"])) and hm["host"] != "localhost":
            out.setdefault(hm["host"], []).append(hm["dev"])
    return out


def _leaf_of(fabric, node_id: str) -> str:
    [link] = fabric.node_links(node_id)
    far = link.key.b if link.key.a.node == node_id else link.key.a
    return fabric.label(far.node)


# -- the capture: hosts, rails, rates --------------------------------------------------------------


def test_every_host_of_the_capture_is_its_hcas_grouped_as_rails(fabric, text):
    named = _named_hcas(text)
    hosts = {h: ids for h, ids in host_index(fabric).items() if h in named}
    assert sorted(hosts) == sorted(named) and len(named) == 121  # 119 DGX + the UFM host + 'ubuntu'
    assert {h: sorted(fabric.nodes[n].attrs["device"] for n in ids) for h, ids in hosts.items()} == \
        {h: sorted(devs) for h, devs in named.items()}
    assert Counter(len(d) for d in named.values()) == Counter({4: 109, 3: 10, 2: 2})
    # rail order is device-number order on both namings
    assert [fabric.label(n) for n in host_nodes(fabric, "a08-p1-dgx-04-c01")] == \
        [f"a08-p1-dgx-04-c01 mlx5_{i}" for i in (0, 1, 4, 5)]
    assert [fabric.nodes[n].attrs["device"] for n in host_nodes(fabric, "a06-p1-dgx-02-c01")] == \
        ["HCA-1", "HCA-2", "HCA-5", "HCA-6"]
    # rail r of a 4-HCA host is cabled to its unit's leaf 'IBLEAF-0<r+1>-<unit>' (rail-optimized wiring) on
    # 108 of the 109 hosts; b08-p1-dgx-08-c01's HCA-5 and HCA-6 cables are swapped in the capture
    wiring = {}
    for host, ports in host_rails(fabric).items():
        if len(named.get(host, ())) == 4:
            leaves = [_leaf_of(fabric, p.node) for p in ports]
            wiring[host] = "".join(re.search(r"IBLEAF-0(\d)-", leaf)[1] for leaf in leaves)
            assert len({re.search(r"IBLEAF-\d+-(\d+)", leaf)[1] for leaf in leaves}) == 1, host
    assert len(wiring) == 109 and {h: w for h, w in wiring.items() if w != "1234"} == {"b08-p1-dgx-08-c01": "1243"}


def test_default_descriptions_and_aggregation_nodes_are_never_hosts(fabric, text):
    descs = [m["desc"] for m in _CA.finditer(text)]
    defaults = sum(1 for d in descs if d.startswith("MT4129") or d.startswith("localhost "))
    ans = sum(1 for d in descs if d == "Mellanox Technologies Aggregation Node")
    assert (len(descs), defaults, ans) == (582, 72, 40)
    assert len(unnamed(fabric)) == defaults
    assert sum(1 for n in fabric.nodes.values() if n.attrs.get("role") == "aggregation") == ans
    assert all(fabric.nodes[n].kind == "switch" for n in fabric.nodes if fabric.nodes[n].attrs.get("role") == "aggregation")


def test_every_cable_is_4x_ndr_at_425_gbps_signalling(fabric, text):
    speeds = Counter(re.findall(r"^\[.*\s(\d+x[A-Z0-9]+)\s*$", text, re.M))  # the speed ending each port line
    assert speeds == Counter({"4xNDR": 2 * len(fabric.links)})  # each cable is printed at both ends
    assert len(fabric.links) == 1114
    assert {(lk.lanes, lk.lane_gbps, lk.capacity_gbps) for lk in fabric.links.values()} == {(4, 106.25, 425.0)}


# -- rails: from device names across the fabric, and HCAs on another rail's leaf --------------------

_SWITCH = re.compile(r'^Switch\s+\d+\s+"[^"]*"\s+#\s+"(?P<desc>[^"]*)"', re.M)
_PORT_DESC = re.compile(r'^\[\d+\].*#\s+"(?P<desc>[^"]*)"', re.M)
_LEAF_RAIL = re.compile(r"IBLEAF-0(\d)-")


def _leaf_numbers(text: str) -> dict[str, list[tuple[str, int]]]:
    """host -> (device, number k of the leaf 'IBLEAF-0k-<unit>' it is cabled to), from the Switch blocks' port lines."""
    out: dict[str, list[tuple[str, int]]] = {}
    for block in text.split("\n\n"):
        sw = _SWITCH.search(block)
        if sw is None or not (leaf := _LEAF_RAIL.search(sw["desc"])):
            continue
        for m in _PORT_DESC.finditer(block[sw.end():]):
            if (hm := _HOST_HCA.match(m["desc"])) and hm["host"] != "localhost":
                out.setdefault(hm["host"], []).append((hm["dev"], int(leaf[1])))
    return out


def _usual_leaf(leaves: dict[str, list[tuple[str, int]]]) -> dict[str, int]:
    """device name -> the leaf number most HCAs of that name are cabled to."""
    seen: dict[str, Counter] = {}
    for pairs in leaves.values():
        for dev, k in pairs:
            seen.setdefault(dev, Counter())[k] += 1
    return {dev: c.most_common(1)[0][0] for dev, c in seen.items()}


def test_hosts_with_an_hca_on_another_rails_leaf_are_warned_about_by_name(text):
    leaves = _leaf_numbers(text)
    usual = _usual_leaf(leaves)
    expected = sorted(h for h, pairs in leaves.items() if len(pairs) > 1 and any(usual[d] != k for d, k in pairs))
    # b08-p1-dgx-08-c01's HCA-5 and HCA-6 cables are swapped; the UFM host and 'ubuntu' hang their mlx5_0/1
    # on unit 08's rail-3 and rail-4 leaves
    assert expected == ["B11-P1-CUFM-02", "b08-p1-dgx-08-c01", "ubuntu"]
    saved = read_ibnetdiscover_file(CAPTURE)
    warned = {p.target: p.error for p in saved.probes if p.probe == "identity" and p.target in leaves}
    assert sorted(warned) == expected
    assert {p.status for p in saved.probes} == {"warning"}
    assert warned["b08-p1-dgx-08-c01"] == (
        "b08-p1-dgx-08-c01: HCA-5 (rail 2) is cabled to MF0;B09-P1-IBLEAF-04-08:MQM9701/U1, a rail-3 leaf; "
        "HCA-6 (rail 3) is cabled to MF0;B09-P1-IBLEAF-03-08:MQM9701/U1, a rail-2 leaf; its cables look swapped: "
        "each rail's HCA belongs on that rail's leaf, or its traffic crosses rails")
    for host in ("B11-P1-CUFM-02", "ubuntu"):
        assert warned[host].startswith(f"{host}: mlx5_0 (rail 0) is cabled to MF0;B09-P1-IBLEAF-03-08")
        assert warned[host].endswith("none of its 2 HCAs is on its own rail's leaf: the host is not wired rail by "
                                     "rail (a management or storage node?)")


def test_every_hca_name_is_one_rail_across_the_fabric_even_on_hosts_missing_a_leaf(fabric, text):
    leaves = _leaf_numbers(text)
    usual = _usual_leaf(leaves)
    rail_of = {}
    for host, ids in host_index(fabric).items():
        for nid in ids:
            if (dev := fabric.nodes[nid].attrs.get("device")) is not None and host in leaves:
                rail_of.setdefault(dev, set()).add(fabric.nodes[nid].attrs["rail"])
    # each device name is one rail on every host: that of the leaf 'IBLEAF-0k' most of its HCAs are on (k - 1)
    assert rail_of == {dev: {k - 1} for dev, k in usual.items()}
    assert rail_of["HCA-6"] == rail_of["mlx5_5"] == {3}
    # leaf IBLEAF-03-01 is not in the capture: unit 01's hosts show HCA-1, HCA-2 and HCA-6, and HCA-6 stays rail 3
    unit1 = sorted(h for h in leaves if h.startswith("a05-p1-dgx-01-"))
    assert len(unit1) == 10 and "IBLEAF-03-01" not in text
    for host in unit1:
        ids = host_nodes(fabric, host)
        assert [(fabric.nodes[n].attrs["device"], fabric.nodes[n].attrs["rail"]) for n in ids] == \
            [("HCA-1", 0), ("HCA-2", 1), ("HCA-6", 3)]
        assert _leaf_of(fabric, ids[-1]) == "MF0;A09-P1-IBLEAF-04-01:MQM9701/U1"


# -- nccl-tests logs on its hosts -------------------------------------------------------------------


def _per_rail_logs(tmp_path, bad_host: str, bad_rail: int, factor: float = 0.35) -> None:
    """One real 2x1 all_reduce log per host pair and rail: GPU r of each host, so rail r."""
    real = DRANET.read_text()
    for a, b in itertools.combinations(UNIT4, 2):
        for rail in range(4):
            log = real.replace(DRANET_HOSTS[0], a).replace(DRANET_HOSTS[1], b)
            log = log.replace("device  0 [", f"device  {rail} [")
            if bad_host in (a, b) and rail == bad_rail:
                log = scaled(log, factor)
            (tmp_path / f"all_reduce_{a}_{b}_gpu{rail}.log").write_text(log)


def test_one_bad_rail_in_per_rail_logs_drains_that_host_by_name_not_its_hca(fabric, tmp_path):
    _per_rail_logs(tmp_path, bad_host=UNIT4[0], bad_rail=2)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert {p.status for p in obs.probes} == {"ok"} and len(obs.pairs) == 6 * 4
    devices = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5")
    for p in obs.pairs:  # GPU r -> the host's r-th HCA in rail order, on the same leaf at both ends
        src, dst = fabric.label(p.src.node).split(), fabric.label(p.dst.node).split()
        assert src[1] == dst[1] in devices and _leaf_of(fabric, p.src.node) == _leaf_of(fabric, p.dst.node)
        assert p.expected_gbps == 425.0
    bad = [p for p in obs.pairs if p.ratio < 0.5]
    assert sorted((fabric.label(p.src.node), fabric.label(p.dst.node)) for p in bad) == \
        [(f"{UNIT4[0]} mlx5_4", f"{h} mlx5_4") for h in UNIT4[1:]]
    assert all(p.busbw_gbps == pytest.approx(31.89 * 8) for p in obs.pairs if p not in bad)  # the real peak row
    # the real log reached 255 Gb/s (31.89 GB/s) on its own 400G NIC: 0.60 of these 425 Gb/s rails,
    # so the run is judged at --slow-ratio 0.5 to keep its figures as they are
    findings = localize(fabric, obs, Options(slow_ratio=0.5))
    blamed = [f for f in findings if f.severity in ("error", "critical")]
    assert [f.name for f in blamed] == [f"{UNIT4[0]} mlx5_4 port 1"]
    assert [(d.node, d.findings) for d in drain_list(fabric, findings)] == [(UNIT4[0], [blamed[0].key])]


def test_an_eight_gpu_log_on_hosts_with_four_rails_is_refused_naming_the_gpu_and_the_rails(fabric, tmp_path):
    log = A3MEGA.read_text().replace(A3MEGA_HOSTS[0], UNIT4[0]).replace(A3MEGA_HOSTS[1], UNIT4[1])
    (tmp_path / "all_reduce_2x8.log").write_text(log)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert not obs.pairs
    [probe] = obs.probes
    line = next(i for i, ln in enumerate(log.splitlines(), 1) if re.match(r"#\s+Rank\s+4\s", ln))
    assert probe.status == "error"
    assert probe.error == (f"{tmp_path / 'all_reduce_2x8.log'}:{line}: rank 4 on host '{UNIT4[0]}' uses GPU 4, "
                           "but the host has 4 rails and none is rail 4 (its rails: 0, 1, 2, 3; "
                           f"HCAs in rail order: {UNIT4[0]} mlx5_0, {UNIT4[0]} mlx5_1, "
                           f"{UNIT4[0]} mlx5_4, {UNIT4[0]} mlx5_5)")
    assert not measure(fabric, obs, Planned()).complete  # counted as not seen, never as a slow rail


def test_gpus_of_a_host_missing_an_hca_use_the_hca_on_their_own_rail_and_a_gpu_with_no_rail_is_refused(
        fabric, tmp_path):
    # unit 01 has no IBLEAF-03 leaf: its hosts show HCA-1, HCA-2 and HCA-6 (rails 0, 1, 3), so GPU 2 has no HCA,
    # and GPU 3 is HCA-6, the third HCA present (taking HCAs by position would give GPU 2 the rail-3 HCA)
    a, b = "a05-p1-dgx-01-c01", "a05-p1-dgx-01-c03"
    real = DRANET.read_text()
    for gpu in range(4):
        log = real.replace(DRANET_HOSTS[0], a).replace(DRANET_HOSTS[1], b).replace("device  0 [", f"device  {gpu} [")
        (tmp_path / f"all_reduce_gpu{gpu}.log").write_text(log)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    status = {Path(p.target).name: p.status for p in obs.probes}
    assert status == {"all_reduce_gpu0.log": "ok", "all_reduce_gpu1.log": "ok", "all_reduce_gpu2.log": "error",
                      "all_reduce_gpu3.log": "ok"}
    used = sorted((fabric.label(p.src.node), fabric.label(p.dst.node)) for p in obs.pairs)
    assert used == [(f"{a} {dev}", f"{b} {dev}") for dev in ("HCA-1", "HCA-2", "HCA-6")]
    for p in obs.pairs:  # each GPU's HCAs are on one leaf: that of the GPU's rail
        assert _leaf_of(fabric, p.src.node) == _leaf_of(fabric, p.dst.node)
    assert {_leaf_of(fabric, p.src.node) for p in obs.pairs if "HCA-6" in fabric.label(p.src.node)} == \
        {"MF0;A09-P1-IBLEAF-04-01:MQM9701/U1"}
    [refused] = [p for p in obs.probes if p.status == "error"]
    bad = tmp_path / "all_reduce_gpu2.log"
    line = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if re.match(rf"#\s+Rank\s+0\s.*{a}", ln))
    assert refused.error == (f"{bad}:{line}: rank 0 on host '{a}' uses GPU 2, but the host has 3 rails and none is "
                             f"rail 2 (its rails: 0, 1, 3; HCAs in rail order: {a} HCA-1, {a} HCA-2, {a} HCA-6)")
    assert len(refused.error.splitlines()) == 1
    assert not measure(fabric, obs, Planned()).complete  # the refused GPU is not seen, never read on another rail


def test_analyze_on_the_capture_and_per_rail_logs_reports_the_host_to_drain(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    _per_rail_logs(logs, bad_host=UNIT4[2], bad_rail=0)
    out = tmp_path / "report.json"
    r = run_fabricdoc("analyze", "--topology", str(CAPTURE), "--nccl-logs", str(logs), "--slow-ratio", "0.5",
                      "-o", str(out))
    assert r.returncode == 1, r.stderr  # faults found
    assert "tested: 24 bandwidth tests in 24 rounds (3 slow," in r.stdout and r.stderr == ""
    lines = r.stdout.splitlines()
    drain = lines[lines.index("drain (1 host):") + 1]
    assert drain.startswith(f"  {UNIT4[2]}: ") and "mlx5" not in drain.split(":")[0]
    report = json.loads(out.read_text())
    assert [d["node"] for d in report["drain"]] == [UNIT4[2]]
    # the swapped cables are in the report's probe health, and drain nothing
    assert [p["status"] for p in report["probes"] if p["target"] == "b08-p1-dgx-08-c01"] == ["warning"]
    # ... and in the text summary, where whoever runs analyze reads them
    warned = [p for p in report["probes"] if p["status"] == "warning"]
    assert lines[lines.index(f"warnings ({len(warned)}):") + 1:][:len(warned)] == [
        f"  identity: {p['error']}" if p["error"].startswith(p["target"] + ":")
        else f"  identity on {p['target']}: {p['error']}" for p in warned]
    swapped = next(p["error"] for p in warned if p["target"] == "b08-p1-dgx-08-c01")
    assert f"  identity: {swapped}" in lines and "its cables look swapped" in swapped
    [finding] = [f for f in report["findings"] if f["severity"] in ("error", "critical")]
    assert finding["name"] == f"{UNIT4[2]} mlx5_0 port 1"
