"""PFC, ECN-CE RoCEv2 and CNP counts from captures written with scapy: exact counts and pause time."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import pcap
from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, Raw, wrpcap
from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause
from scapy.contrib.roce import BTH, CNPPadding

from fabricdoc.errors import ParseError

PFC_DST = "01:80:c2:00:00:01"


def pfc(t: float, **prio_quanta: int):
    fields = {}
    for prio, q in prio_quanta.items():
        fields[f"{prio}_enabled"] = 1
        fields[f"{prio}_pause_time"] = q
    p = Ether(dst=PFC_DST, src="02:00:00:00:00:0a") / MACControlClassBasedFlowControl(**fields)
    p.time = t
    return p


def roce(t: float, src: str, dst: str, qp: int, tos: int, opcode: int = 0x0A, sport: int = 49152, vlan=None):
    l2 = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan, prio=3)
    bth = BTH(opcode=opcode, dqpn=qp, psn=1)
    body = bth / CNPPadding() if opcode == 0x81 else bth / Raw(b"\x00" * 64)
    p = l2 / IP(src=src, dst=dst, tos=tos) / UDP(sport=sport, dport=4791) / body
    p.time = t
    return p


def capture():
    pkts = []
    t = 1000.0
    for i in range(10):  # 10 XOFF on prio 3 at full quanta
        pkts.append(pfc(t + i * 0.001, c3=0xFFFF))
    pkts.append(pfc(t + 0.02, c3=0))  # XON
    pkts.append(pfc(t + 0.03, c3=1000, c5=500))  # two priorities in one frame
    pause = Ether(dst=PFC_DST, src="02:00:00:00:00:0b") / MACControlPause(pause_time=200)
    pause.time = t + 0.04
    pkts.append(pause)
    for i in range(20):  # flow A: 20 packets, every 4th CE
        pkts.append(roce(t + 0.1 + i * 1e-4, "10.0.0.1", "10.0.0.2", 0x11, 0x03 if i % 4 == 0 else 0x02))
    for i in range(6):  # flow B on a VLAN, all CE
        pkts.append(roce(t + 0.2 + i * 1e-4, "10.0.0.3", "10.0.0.2", 0x22, 0x03, vlan=100))
    for i in range(3):  # CNPs back to A's sender
        pkts.append(roce(t + 0.3 + i * 1e-4, "10.0.0.2", "10.0.0.1", 0x33, 0x02, opcode=0x81))
    v6 = (Ether() / IPv6(src="fd00::1", dst="fd00::2", tc=0x03) / UDP(sport=50000, dport=4791)
          / BTH(opcode=0x0A, dqpn=0x44) / Raw(b"\x00" * 32))
    v6.time = t + 0.4
    pkts.append(v6)
    other = Ether() / IP(src="10.0.0.9", dst="10.0.0.2", tos=0x03) / UDP(sport=1, dport=53) / Raw(b"x")
    other.time = t + 0.5
    pkts.append(other)  # CE but not RoCE: not counted
    return pkts


@pytest.fixture
def pcap_file(tmp_path):
    path = tmp_path / "fdh-roce.pcap"
    wrpcap(str(path), capture())
    return path


def test_pfc_frames_counted_per_priority_with_pause_time(pcap_file):
    s = pcap.summarize_pcap(pcap_file, link_gbps=100.0)
    assert s.error is None
    p3, p5, glob = s.pfc[3], s.pfc[5], s.pfc["global"]
    assert (p3.frames, p3.xoff, p3.xon, p3.quanta) == (12, 11, 1, 10 * 0xFFFF + 1000)
    assert (p5.frames, p5.quanta) == (1, 500)
    assert (glob.frames, glob.quanta) == (1, 200)
    # one quantum = 512 bit times; at 100 Gb/s that is 5.12 ns
    assert s.pause_s(3) == pytest.approx((10 * 0xFFFF + 1000) * 512 / 100e9)
    assert p3.first_ts == pytest.approx(1000.0) and p3.last_ts == pytest.approx(1000.03)


def test_rocev2_ce_and_cnp_counted_per_flow(pcap_file):
    s = pcap.summarize_pcap(pcap_file)
    assert s.packets == len(capture())
    assert (s.roce_packets, s.roce_ce, s.cnp) == (30, 5 + 6 + 1, 3)
    a = s.flows[("10.0.0.1", "10.0.0.2", 49152, 0x11)]
    assert (a.packets, a.ce, a.cnp) == (20, 5, 0)
    assert s.flows[("10.0.0.3", "10.0.0.2", 49152, 0x22)].ce == 6
    assert s.flows[("10.0.0.2", "10.0.0.1", 49152, 0x33)].cnp == 3
    assert s.flows[("fd00::1", "fd00::2", 50000, 0x44)].ce == 1
    assert s.pause_s(3) is None  # no link speed given: no time, not a guess


def test_lean_reader_agrees_with_scapy_dissection(pcap_file):
    lean = pcap.summarize_pcap(pcap_file, link_gbps=200.0)
    full = pcap.scapy_summary(pcap_file, link_gbps=200.0)
    assert lean.to_dict()["pfc"] == full.to_dict()["pfc"]
    assert (lean.roce_packets, lean.roce_ce, lean.cnp) == (full.roce_packets, full.roce_ce, full.cnp)
    assert {k: vars(v) for k, v in lean.flows.items()} == {k: vars(v) for k, v in full.flows.items()}


def test_truncated_capture_keeps_what_was_read_and_says_where(tmp_path, pcap_file):
    data = pcap_file.read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(data[:-30])  # inside the last packet
    s = pcap.summarize_pcap(cut)
    assert s.error is not None and "truncated packet" in s.error and "\n" not in s.error
    assert s.packets == len(capture()) - 1
    assert s.pfc[3].frames == 12 and s.cnp == 3


def test_counters_record_uses_pause_names(pcap_file):
    c = pcap.pcap_counters(pcap.summarize_pcap(pcap_file, link_gbps=100.0), "h1", 1, "eth0")
    assert c.source == "pcap" and c.ifname == "eth0"
    assert c.values["pcap_prio3_pause"] == 11
    assert c.values["pcap_prio3_pause_duration"] == round((10 * 0xFFFF + 1000) * 512 / 100e9 * 1e6)
    assert c.values["pcap_rocev2_ce_packets"] == 12 and c.values["pcap_cnp_packets"] == 3


def test_not_a_pcap_is_a_parse_error(tmp_path):
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\x00" * 40)
    with pytest.raises(ParseError, match="pcapng"):
        pcap.summarize_pcap(bad)
    bad.write_bytes(b"hello")
    with pytest.raises(ParseError, match="not a pcap"):
        pcap.summarize_pcap(bad)
