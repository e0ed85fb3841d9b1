"""Host checks and kernel messages become host/NIC findings, never cable faults; unknown is not seen."""

from __future__ import annotations

from fabricdoc.analysis.host_config import host_config_findings, kernel_findings
from fabricdoc.model.records import HostCheck, KernelEvent


def test_failed_checks_are_host_config_on_the_host_and_pcie_degraded_on_the_nic():
    checks = [HostCheck("h1", "gpudirect", "fail", "host", "no peer-memory module"),
              HostCheck("h1", "pcie_link", "fail", "mlx5_0 (0000:b1:00.0)", "x8 below x16"),
              HostCheck("h2", "gpudirect", "ok", "host", "nvidia_peermem loaded")]
    found = {(f.kind, f.name, f.fault) for f in host_config_findings(checks)}
    assert found == {("host", "h1", "host_config"), ("nic", "h1 mlx5_0 (0000:b1:00.0)", "pcie_degraded")}
    assert all(f.kind != "link" for f in host_config_findings(checks))


def test_the_host_whose_mtu_differs_from_the_rest_is_named():
    checks = [HostCheck(h, "mtu", "ok", "eth0", "", {"mtu": m}) for h, m in (("a", 9000), ("b", 9000), ("c", 1500))]
    (f,) = host_config_findings(checks)
    assert (f.name, f.fault) == ("c", "host_config") and "MTU 1500 while 2 of 3 read 9000" in f.evidence[0].reason


def test_mtus_are_compared_per_fabric_port_or_interface_never_pooled_across_kinds():
    checks = [HostCheck(h, "mtu", "ok", ifname, "", {"mtu": mtu}) for h in ("a", "b", "c")
              for ifname, mtu in (("ib0", 4092), ("eth0", 1500))]  # IPoIB and management differ on every host
    assert host_config_findings(checks) == []
    by_port = [HostCheck(h, "mtu", "ok", f"veth-{h}", "", {"mtu": m}, port=1) for h, m in (("a", 9000), ("b", 9000), ("c", 1500))]
    (f,) = host_config_findings(by_port)  # interface names differ per host; the fabric port is the same
    assert f.name == "c" and "MTU 1500 while 2 of 3 read 9000" in f.evidence[0].reason


def test_the_host_whose_lossless_priorities_differ_is_named():
    checks = [HostCheck(h, "pfc", "ok", "eth0", "", {"pfc_prios": p}, port=1)
              for h, p in (("a", "3"), ("b", "3"), ("c", "none"))]
    (f,) = host_config_findings(checks)
    assert f.name == "c" and "PFC priorities none while 2 of 3 read 3" in f.evidence[0].reason


def test_unknown_and_not_applicable_checks_are_never_findings():
    checks = [HostCheck("h", "pcie_acs", "unknown", "mlx5_0", "config space not readable"),
              HostCheck("h", "numa", "n/a", "mlx5_0", "no GPU seen")]
    assert host_config_findings(checks) == []


def test_kernel_thermal_and_cmd_timeouts_are_nic_findings_with_counts():
    evs = [KernelEvent("h", 10.0, "cmd_timeout", "mlx5_core", "CREATE_DCT timeout", "0000:61:00.0"),
           KernelEvent("h", 12.0, "cmd_timeout", "mlx5_core", "CREATE_DCT timeout", "0000:61:00.0"),
           KernelEvent("h", 5.0, "link", "mlx5_core", "Link down", "0000:61:00.0", "eth0", 1, "down")]
    (f,) = kernel_findings(evs)
    assert (f.kind, f.fault, f.evidence[0].count, f.evidence[0].first) == ("nic", "nic_firmware", 2, 10.0)


def test_probe_records_carry_checks_and_kernel_events_to_analyze_on_the_fabric_host(tmp_path):
    import json

    from fabricdoc.cli.main import main
    from fabricdoc.sources.records import records_to_json

    records = [HostCheck("node0003", "gpudirect", "fail", "host", "no peer-memory module loaded"),
               KernelEvent("node0003", 1700000000.0, "thermal", "mlx5_core", "High temperature on sensors",
                           "0000:61:00.0")]
    path = tmp_path / "probe.json"
    path.write_text(records_to_json(records))
    out = tmp_path / "r.json"
    assert main(["analyze", "--fabric", "demo", "--records", str(path), "-o", str(out)]) == 1
    report = json.loads(out.read_text())
    found = {(f["kind"], f["fault"], tuple(f["node_ids"])) for f in report["findings"]}
    assert ("host", "host_config", ("node0003",)) in found
    assert any(k == "nic" and nodes == ("node0003",) for k, _, nodes in found)
    assert "node0003" in {d["node"] for d in report["drain"]}


def test_the_same_host_config_fault_from_sysfs_and_from_nccl_is_one_finding_with_both_evidences():
    from fabricdoc.analysis.localize import localize
    from fabricdoc.fabric.generators import fat_tree_2
    from fabricdoc.model.records import Observations, TransportUse

    obs = Observations(
        host_checks=[HostCheck("node0002", "gpudirect", "fail", "host", "no peer-memory module loaded")],
        transports=[TransportUse("node0002", "node0003", "NET/Socket", False, "job.log", 7,
                                 "Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0")])
    findings = [f for f in localize(fat_tree_2(4, 2, 2), obs) if f.fault == "host_config"]
    assert [(f.kind, f.node_ids) for f in findings] == [("host", ["node0002"])]
    assert {e.kind for e in findings[0].evidence} >= {"host", "nccl_log"}
    assert len({f.key for f in findings}) == len(findings)


def _slow_tests_of(fabric, host: str, ratio: float):
    """Every host port to every other: the tests touching ``host`` at ``ratio`` of expected, the rest healthy."""
    from fabricdoc.model.records import PairResult

    ports = [p for n in fabric.hosts() for p in fabric.host_ports(n.id)]
    pairs = [(a, b) for a in ports for b in ports if a != b]
    return [PairResult(a, b, "ok", 400.0 * (ratio if host in (a.node, b.node) else 1.0), 400.0, round=r)
            for r, (a, b) in enumerate(pairs)]


def test_slow_tests_of_a_host_whose_nic_trained_at_x8_are_the_host_not_its_cable():
    from fabricdoc.analysis.localize import localize
    from fabricdoc.fabric.generators import fat_tree_2
    from fabricdoc.model.records import Observations

    fabric = fat_tree_2(2, 1, 2)
    pairs = _slow_tests_of(fabric, "node0001", 0.5)
    plain = localize(fabric, Observations(pairs=pairs))
    assert [(f.kind, f.fault) for f in plain if "node0001" in f.node_ids][0][1] == "degraded_bandwidth"
    x8 = HostCheck("node0001", "pcie_link", "fail", "mlx5_0 (0000:61:00.0)", "PCIe link trained at x8 16 GT/s, below its x16")
    found = localize(fabric, Observations(pairs=pairs, host_checks=[x8]))
    assert [(f.kind, f.fault) for f in found] == [("nic", "pcie_degraded")]
    assert {e.kind for e in found[0].evidence} == {"host", "pairs"}


def test_the_host_trusting_pcp_while_the_others_trust_dscp_is_named():
    checks = [HostCheck(h, "qos_trust", "ok", "ens6", "", {"trust": t}, port=1)
              for h, t in (("a", "dscp"), ("b", "dscp"), ("c", "pcp"))]
    (f,) = host_config_findings(checks)
    assert f.name == "c" and "QoS trust state pcp while 2 of 3 read dscp" in f.evidence[0].reason
