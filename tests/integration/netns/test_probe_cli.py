"""`fabricdoc probe` and the host bundle: JSON a launcher can gather, and failures kept to one line."""

from __future__ import annotations

import os
import shutil

import pytest
from fabricdoc.probes.host.collect import collect_host
from scapy.all import IP, UDP, Ether, Raw, wrpcap
from scapy.contrib.roce import BTH

from fabricdoc.cli.main import main
from fabricdoc.model.records import PortCounters, PortState, ProbeRun
from fabricdoc.sources.records import documents_from_json, records_from_json
from tests.helpers.paths import DATA

SYSFS = os.path.join(DATA, "sysfs", "mlx5_host")


def runs(records) -> dict[str, ProbeRun]:
    return {p.probe: p for p in records if isinstance(p, ProbeRun)}


def write_pcap(path, n=5):
    pkts = [Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=3) / UDP(sport=1000, dport=4791)
            / BTH(opcode=0x0A, dqpn=7) / Raw(b"\x00" * 32) for _ in range(n)]
    wrpcap(str(path), pkts)


@pytest.mark.netns
def test_probe_json_round_trips_into_records(two_hosts, capsys, tmp_path):
    _lab, a, _b = two_hosts
    out = tmp_path / "node.json"
    rc = main(["probe", "--netns", a, "--port", "fdha0=1", "--sysfs-root", SYSFS, "--no-gpu",
               "--json", "-o", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    records = records_from_json(text, "stdout")
    assert records == records_from_json(out.read_text(), str(out))
    sources = {r.source for r in records if isinstance(r, PortCounters)}
    assert sources == {"netlink", "tc", "netstat", "ethtool", "sysfs"}
    states = [r for r in records if isinstance(r, PortState) and r.source == "netlink"]
    assert [(s.node, s.port, s.ifname, s.state) for s in states] == [(a, 1, "fdha0", "up")]
    assert all(p.status == "ok" for p in runs(records).values())
    assert documents_from_json(text)[0]["extra"]["node"] == a


@pytest.mark.netns
def test_missing_ethtool_broken_sysfs_and_truncated_pcap_are_one_line_each(two_hosts, tmp_path, monkeypatch):
    _lab, a, _b = two_hosts
    root = tmp_path / "host"
    shutil.copytree(SYSFS, root)
    (root / "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error").unlink()
    (root / "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error").symlink_to(tmp_path / "gone")
    cap = tmp_path / "cut.pcap"
    write_pcap(cap)
    cap.write_bytes(cap.read_bytes()[:-10])
    # a PATH with ip and cat but no ethtool
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("ip", "cat"):
        (bindir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bindir))
    b = collect_host(netns=a, port_of={"fdha0": 1}, sysfs_root=root, gpus=False, pcap_file=cap)
    r = runs(b.all_records)
    assert r["ethtool"].status == "unsupported" and r["ethtool"].error == "ethtool: the ethtool command is not installed"
    assert r["sysfs"].status == "error" and "counters/symbol_error" in r["sysfs"].error
    assert r["pcap"].status == "error" and "truncated packet 5" in r["pcap"].error
    assert all("\n" not in (p.error or "") for p in r.values())
    # the other records are kept
    assert r["netlink"].status == r["tc"].status == r["netstat"].status == "ok"
    assert len([c for c in b.records if isinstance(c, PortCounters) and c.source == "sysfs"]) == 3
    pc = next(c for c in b.records if isinstance(c, PortCounters) and c.source == "pcap")
    assert pc.values["pcap_rocev2_ce_packets"] == 4 and pc.ifname == "fdha0"
