"""``analyze --ibdiagnet DIR`` on a real NDR run (tests/data/ibdiagnet2/real_*: see each README)."""

from __future__ import annotations

import json
import shutil

import pytest

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.fabric.identity import host_nodes, host_rails
from fabricdoc.model.counters import deltas
from fabricdoc.model.records import PortRef
from fabricdoc.sources.ibdiagnet import read_ibdiagnet_dir
from tests.helpers.cli import run_fabricdoc
from tests.helpers.paths import DATA

RUN = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
SKIP_PM = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_skip_pm_vports"
CABLES = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_cables"
FDBS = DATA / "ibdiagnet2" / "real_index_fdbs_docstring_excerpt" / "ibdiagnet2.fdbs"
MLX5_3 = "0x5c25730300e66b0e"  # is-north-7-compute-1 mlx5_3: SymbolErrorCounter 65535 in PM_INFO
LEAF = "0xfc6a1c030091cf00"


@pytest.fixture(scope="module")
def run():
    return read_ibdiagnet_dir(RUN)


def copy_of(tmp_path, source, *names):
    out = tmp_path / "run"
    out.mkdir()
    for name in names:
        shutil.copy(source / name, out / name)
    return out


def test_the_fabric_has_one_8_rail_host_9_switches_and_7_aggregation_nodes(run):
    fabric = run.fabric
    assert fabric.summary() == {"hosts": 1, "switches": 16, "links": 23}  # one host of 8 HCAs; 9 switches + 7 ANs
    assert sorted(run.identity.hosts) == ["is-north-7-compute-1"] and run.identity.unnamed == {}
    assert sorted(set(run.identity.not_hosts.values())) == ["aggregation"] and len(run.identity.not_hosts) == 7
    rails = host_rails(fabric)["is-north-7-compute-1"]
    assert [fabric.nodes[p.node].attrs["device"] for p in rails] == [
        "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert fabric.port_lids[PortRef(MLX5_3, 1)] == 4  # LID from PORTS


def test_links_train_4x_ndr_and_their_maximum_is_what_both_ends_support(run):
    assert {(lk.lanes, lk.lane_gbps, lk.max_lanes, lk.max_lane_gbps) for lk in run.fabric.links.values()} == {
        (4, 106.25, 4, 106.25)}
    states = {(s.node, s.port): s for s in run.observations.states}
    assert len(states) == 46  # every port with a PortState (a switch's port 0 has none)
    s = states[(MLX5_3, 1)]
    assert (s.state, s.phys_state, s.lanes, s.lane_gbps, s.peer) == ("Active", "LinkUp", 4, 106.25,
                                                                     PortRef("0xfc6a1c030091f600", 1))


def test_pm_info_minus_pm_delta_is_the_first_read_one_pause_earlier(run):
    obs = run.observations
    assert (run.counters, obs.interval_s, len(obs.before), len(obs.after)) == ("delta", 1.0, 46, 46)
    before = {(c.node, c.port): c for c in obs.before}
    after = {(c.node, c.port): c for c in obs.after}
    spine1 = after[("0xb0cf0e0300d33fc0", 1)]
    # PortXmitPkts from PortXmitPktsExtended 307391959 (64 bits); PM_DELTA says it moved 293.
    assert (spine1.values["PortXmitPkts"], spine1.width_bits["PortXmitPkts"]) == (307391959, 64)
    assert before[("0xb0cf0e0300d33fc0", 1)].values["PortXmitPkts"] == 307391959 - 293
    assert spine1.values["PortXmitWait"] == 9463628588  # the 32-bit one is stuck at 4294967295
    assert spine1.timestamp - before[("0xb0cf0e0300d33fc0", 1)].timestamp == 1.0
    hca = after[(MLX5_3, 1)]
    # SymbolErrorCounterExt reads 0 below the 16-bit 65535: that device does not keep it, the register does.
    assert (hca.values["SymbolErrorCounter"], "SymbolErrorCounter" in hca.width_bits) == (65535, False)
    leaf = after[(LEAF, 1)].values
    assert (leaf["LinkDownedCounter"], leaf["PortXmitDiscards"], leaf["PortRcvSwitchRelayErrors"]) == (12, 85, 446)
    moved = {d.name for d in deltas(obs.before, obs.after, changed_only=True)}
    assert moved == {"xmit_bytes", "rcv_bytes", "xmit_packets", "rcv_packets", "xmit_unicast_packets",
                     "rcv_unicast_packets"}  # no error counter moved during ibdiagnet's 1 s pause


def test_ibdiagnet_s_own_warnings_are_probe_warnings_naming_the_line(run):
    warnings = {r.error.split(":")[0]: r for r in run.observations.probes}
    lines = (RUN / "ibdiagnet2.db_csv").read_text().splitlines()
    first_row = lines.index("START_WARNINGS_FW_CHECK") + 3  # START, header, then the first row (1-based)
    assert lines[first_row - 1].startswith("NODE,0xfc6a1c030091cf00,") and first_row == 322
    assert warnings["WARNINGS_FW_CHECK"].target == f"{RUN / 'ibdiagnet2.db_csv'}:{first_row}"
    assert warnings["WARNINGS_FW_CHECK"].status == "warning" and "7 rows" in warnings["WARNINGS_FW_CHECK"].error


def test_without_pm_delta_there_is_one_sample_and_no_rates(tmp_path):
    d = copy_of(tmp_path, RUN, "ibdiagnet2.db_csv", "ibdiagnet2.log")
    text = (d / "ibdiagnet2.db_csv").read_text()
    start, end = text.index("START_PM_DELTA"), text.index("END_PM_DELTA") + len("END_PM_DELTA\n")
    (d / "ibdiagnet2.db_csv").write_text(text[:start] + text[end:])
    r = read_ibdiagnet_dir(d)
    assert (r.counters, len(r.observations.before), len(r.observations.after)) == ("one sample", 0, 46)
    assert any("without PM_DELTA" in (p.error or "") for p in r.observations.probes)


def test_without_the_log_the_pause_is_unknown_and_no_rate_is_invented(tmp_path):
    r = read_ibdiagnet_dir(copy_of(tmp_path, RUN, "ibdiagnet2.db_csv"))
    assert (r.counters, r.observations.interval_s, r.observations.before) == ("one sample", None, [])
    assert any("pause between its two counter reads is not known" in (p.error or "") for p in r.observations.probes)


def test_a_run_with_skip_pm_has_no_counters_and_says_so():
    r = read_ibdiagnet_dir(SKIP_PM)
    assert (r.counters, r.observations.after) == ("none", [])
    assert [p.error for p in r.observations.probes if "pm" in (p.error or "")] == ["ibdiagnet ran with --skip pm: no counters"]
    assert [r.fabric.nodes[n].attrs["device"] for n in host_nodes(r.fabric, "h4-1-gpu")][:3] == ["HCA-1", "HCA-2", "HCA-3"]


def test_lst_and_pm_alone_give_the_topology_and_one_counter_sample(tmp_path):
    r = read_ibdiagnet_dir(copy_of(tmp_path, RUN, "ibdiagnet2.lst", "ibdiagnet2.pm", "ibdiagnet2.log"))
    assert r.fabric.summary() == {"hosts": 1, "switches": 16, "links": 23}
    assert (r.counters, len(r.observations.after)) == ("one sample", 13)
    spine1 = next(c for c in r.observations.after if (c.node, c.port) == ("0xb0cf0e0300d33fc0", 1))
    assert spine1.values["PortXmitData"] == 0x00000045A9712343  # port_xmit_data_extended
    assert {s.source for s in r.observations.states} == {"ibdiagnet lst"}


def test_net_dump_gives_switch_port_states_when_ports_are_not_there(tmp_path):
    r = read_ibdiagnet_dir(copy_of(tmp_path, RUN, "ibdiagnet2.lst", "ibdiagnet2.net_dump"))
    assert len(r.observations.states) == 130 and r.notes[1] == "link states from ibdiagnet2.net_dump"


def test_cables_land_on_their_nodes(tmp_path):
    d = copy_of(tmp_path, SKIP_PM, "ibdiagnet2.db_csv")
    shutil.copy(CABLES / "ibdiagnet2.cables", d / "ibdiagnet2.cables")
    r = read_ibdiagnet_dir(d)
    cable = r.fabric.nodes["0x5c25730300d0dc72"].attrs["cables"][1]  # h4-1-gpu HCA-1
    assert (cable["part_number"], cable["serial"], cable["temperature_c"]) == ("OSFP-SR4-400G-FL", "G2420461167", 60.0)
    assert cable["rx_power_mw"] == [None, 1.585, 1.585, 1.585]


def test_routes_from_fdbs_must_name_switches_of_this_fabric(tmp_path):
    d = copy_of(tmp_path, RUN, "ibdiagnet2.db_csv")
    shutil.copy(FDBS, d / "ibdiagnet2.fdbs")  # another fabric's switch
    with pytest.raises(ParseError) as info:
        read_ibdiagnet_dir(d)
    assert (info.value.source, info.value.line_no) == (str(d / "ibdiagnet2.fdbs"), 1)
    assert "0x0002c9030068ec10 is not in the fabric" in info.value.reason


def test_a_directory_without_ibdiagnet_files_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not an ibdiagnet output directory"):
        read_ibdiagnet_dir(tmp_path)


# -- through the CLI --------------------------------------------------------------------------


def test_analyze_ibdiagnet_gives_a_report_with_verdict_coverage_and_hosts(tmp_path):
    out = tmp_path / "report.json"
    r = run_fabricdoc("analyze", "--ibdiagnet", str(RUN), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "verdict: PASS" in r.stdout and "46 ports sampled over 1s" in r.stdout
    report = json.loads(out.read_text())
    assert report["coverage"]["ports"] == {"planned": 46, "sampled": 46}
    hosts = {n["attrs"].get("host") for n in report["topology"]["nodes"] if n["kind"] == "host"}
    assert hosts == {"is-north-7-compute-1"}
    roles = [n["attrs"].get("role") for n in report["topology"]["nodes"] if n["kind"] == "switch"]
    assert roles.count("aggregation") == 7 and len(roles) == 16
    assert any(p["status"] == "warning" and p["error"].startswith("WARNINGS_FW_CHECK") for p in report["probes"])


def test_analyze_ibdiagnet_without_counters_is_incomplete_never_pass():
    r = run_fabricdoc("analyze", "--ibdiagnet", str(SKIP_PM))
    assert r.returncode == 2 and "verdict: INCOMPLETE" in r.stdout


def test_analyze_ibdiagnet_with_a_host_map_renames_an_hca(tmp_path):
    host_map = tmp_path / "hosts.csv"
    host_map.write_text(f"guid,host,rail\n{MLX5_3},spare-node,0\n")
    r = run_fabricdoc("analyze", "--ibdiagnet", str(RUN), "--host-map", str(host_map), "--json")
    assert r.returncode == 0, r.stderr
    nodes = {n["id"]: n for n in json.loads(r.stdout)["topology"]["nodes"]}
    assert (nodes[MLX5_3]["attrs"]["host"], nodes[MLX5_3]["attrs"]["rail"]) == ("spare-node", 0)


@pytest.mark.parametrize(("args", "needle"), [
    (["--ibdiagnet", str(RUN), "--fabric", "demo"], "not both"),
    (["--ibdiagnet", "/nonexistent-dir"], "not a directory"),
    (["--ibdiagnet", str(RUN), "--host-map", "/nonexistent.csv"], "cannot read host map"),
])
def test_bad_ibdiagnet_arguments_are_one_line_and_exit_2(args, needle):
    r = run_fabricdoc("analyze", *args)
    assert r.returncode == 2 and needle in r.stderr and r.stderr.strip().count("\n") == 0


def test_a_trimmed_ibnetdiscover_file_is_refused_by_analyze_with_its_file_and_line():
    path = DATA / "ibnetdiscover" / "real_topograph_dgx_h100_superpod_ndr" / "example.out"
    r = run_fabricdoc("analyze", "--fabric", str(path), "--nccl-logs", str(DATA))
    assert r.returncode == 2 and f"{path}:12: output ends early" in r.stderr
