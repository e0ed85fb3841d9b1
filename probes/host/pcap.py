"""Count and time PFC pause frames, ECN-marked RoCEv2 packets and CNPs in a packet capture.

PFC (IEEE 802.1Qbb) is a MAC Control frame (EtherType 0x8808) with opcode
0x0101, a class-enable vector and eight 16-bit pause quanta; one quantum is 512
bit times, so a pause lasts ``quanta * 512 / link_bps`` seconds. Classic 802.3x
PAUSE (opcode 0x0001) is counted as priority ``"global"``. RoCEv2 is UDP port
4791; the IP header's ECN bits say CE (0b11); a BTH opcode of 0x81 is a CNP.

The hot loop is a lean ``struct`` reader over the classic pcap format
(nanosecond or microsecond, either byte order; Ethernet, Linux cooked v1/v2);
scapy's dissection is far too slow for large captures and is used only by
:func:`scapy_summary` to cross-check on small ones. A truncated file keeps what
was read before the cut and says where it stopped.
"""

from __future__ import annotations

import mmap
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.records import PortCounters

ETH_P_MAC_CONTROL = 0x8808
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
MAC_CONTROL_PAUSE = 0x0001
MAC_CONTROL_PFC = 0x0101
ROCEV2_PORT = 4791
BTH_OPCODE_CNP = 0x81
ECN_CE = 3
PAUSE_QUANTUM_BITS = 512

LINKTYPE_ETHERNET = 1
LINKTYPE_LINUX_SLL = 113
LINKTYPE_LINUX_SLL2 = 276

_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}


@dataclass
class PauseStats:
    """PFC/PAUSE frames of one priority: XOFF (quanta > 0) and XON (quanta 0) counts."""

    frames: int = 0
    xoff: int = 0
    xon: int = 0
    quanta: int = 0
    first_ts: float | None = None
    last_ts: float | None = None

    def pause_s(self, link_gbps: float | None) -> float | None:
        """Total requested pause time at ``link_gbps`` (None when the speed is unknown)."""
        if not link_gbps:
            return None
        return self.quanta * PAUSE_QUANTUM_BITS / (link_gbps * 1e9)


@dataclass
class FlowStats:
    """RoCEv2 packets of one flow (src IP, dst IP, UDP source port, destination QP)."""

    packets: int = 0
    ce: int = 0
    cnp: int = 0
    first_ts: float | None = None
    last_ts: float | None = None


@dataclass
class PcapSummary:
    """What one capture shows; ``error`` is set when the file ended early or was garbled."""

    source: str
    packets: int = 0
    first_ts: float | None = None
    last_ts: float | None = None
    pfc: dict[int | str, PauseStats] = field(default_factory=dict)
    roce_packets: int = 0
    roce_ce: int = 0
    cnp: int = 0
    flows: dict[tuple[str, str, int, int], FlowStats] = field(default_factory=dict)
    short: int = 0  # packets captured too short to classify
    link_gbps: float | None = None
    error: str | None = None

    @property
    def pfc_frames(self) -> int:
        return sum(s.frames for s in self.pfc.values())

    def pause_s(self, prio: int | str) -> float | None:
        stats = self.pfc.get(prio)
        return stats.pause_s(self.link_gbps) if stats else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (flows keyed ``src>dst:sport/qpN``)."""
        return {
            "source": self.source,
            "packets": self.packets,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "link_gbps": self.link_gbps,
            "pfc": {
                str(p): {**vars(s), "pause_s": s.pause_s(self.link_gbps)}
                for p, s in sorted(self.pfc.items(), key=lambda kv: str(kv[0]))
            },
            "roce_packets": self.roce_packets,
            "roce_ce": self.roce_ce,
            "cnp": self.cnp,
            "flows": {f"{s}>{d}:{sp}/qp{qp}": vars(st) for (s, d, sp, qp), st in self.flows.items()},
            "short": self.short,
            "error": self.error,
        }


def _ip4(b: bytes) -> str:
    return ".".join(str(x) for x in b)


def _ip6(b: bytes) -> str:
    import ipaddress

    return str(ipaddress.IPv6Address(b))


def summarize_pcap_bytes(
    data: bytes | mmap.mmap, source: str = "<pcap>", link_gbps: float | None = None
) -> PcapSummary:
    """Summarize a classic pcap held in memory (bytes or an mmap)."""
    if len(data) < 24:
        raise ParseError(source, 0, "", f"not a pcap file: {len(data)} bytes, need a 24-byte header")
    magic = bytes(data[:4])
    if magic == b"\x0a\x0d\x0d\x0a":
        raise ParseError(source, 0, "", "pcapng is not supported; convert with 'editcap -F pcap'")
    if magic not in _MAGIC:
        raise ParseError(source, 0, magic.hex(), "not a pcap file (bad magic)")
    order, tick = _MAGIC[magic]
    linktype = struct.unpack_from(order + "I", data, 20)[0] & 0x0FFFFFFF
    if linktype == LINKTYPE_ETHERNET:
        l2_len, proto_at = 14, 12
    elif linktype == LINKTYPE_LINUX_SLL:
        l2_len, proto_at = 16, 14
    elif linktype == LINKTYPE_LINUX_SLL2:
        l2_len, proto_at = 20, 0
    else:
        raise ParseError(source, 0, str(linktype), "unsupported link type (need Ethernet or Linux cooked)")

    summary = PcapSummary(source=source, link_gbps=link_gbps)
    pfc = summary.pfc
    flows = summary.flows
    rec = struct.Struct(order + "IIII")
    unpack_rec = rec.unpack_from
    u16 = struct.Struct(">H").unpack_from
    pfc_q = struct.Struct(">HHHHHHHHH").unpack_from  # class-enable vector + 8 quanta
    n = len(data)
    off = 24
    packets = short = roce = roce_ce = cnp = 0
    first_ts = last_sec = last_frac = None

    def pause(prio: int | str, q: int, ts: float) -> None:
        st = pfc.get(prio)
        if st is None:
            st = pfc[prio] = PauseStats(first_ts=ts)
        st.frames += 1
        st.quanta += q
        if q:
            st.xoff += 1
        else:
            st.xon += 1
        st.last_ts = ts

    while off < n:
        if off + 16 > n:
            summary.error = f"truncated record header at byte {off} (after {packets} packets)"
            break
        sec, frac, caplen, _wirelen = unpack_rec(data, off)
        start = off + 16
        end = start + caplen
        if end > n:
            summary.error = (f"truncated packet {packets + 1} at byte {off}: "
                             f"needs {caplen} bytes, {n - start} left")
            break
        off = end
        packets += 1
        if first_ts is None:
            first_ts = sec + frac * tick
        last_sec, last_frac = sec, frac
        if caplen < l2_len:
            short += 1
            continue
        etype = u16(data, start + proto_at)[0]
        l3 = start + l2_len
        while etype in (ETH_P_8021Q, ETH_P_8021AD):
            if l3 + 4 > end:
                break
            etype = u16(data, l3 + 2)[0]
            l3 += 4
        if etype == ETH_P_IP:
            if l3 + 28 > end:
                short += 1
                continue
            if data[l3 + 9] != 17:
                continue
            udp = l3 + (data[l3] & 0x0F) * 4
            if udp + 20 > end:
                short += 1
                continue
            if u16(data, udp + 2)[0] != ROCEV2_PORT:
                continue
            ecn = data[l3 + 1] & 3
            src, dst = bytes(data[l3 + 12 : l3 + 16]), bytes(data[l3 + 16 : l3 + 20])
        elif etype == ETH_P_IPV6:
            if l3 + 60 > end:
                short += 1
                continue
            if data[l3 + 6] != 17:
                continue
            udp = l3 + 40
            if u16(data, udp + 2)[0] != ROCEV2_PORT:
                continue
            ecn = (data[l3 + 1] >> 4) & 3
            src, dst = bytes(data[l3 + 8 : l3 + 24]), bytes(data[l3 + 24 : l3 + 40])
        elif etype == ETH_P_MAC_CONTROL:
            if l3 + 4 > end:
                short += 1
                continue
            opcode = u16(data, l3)[0]
            ts = sec + frac * tick
            if opcode == MAC_CONTROL_PFC:
                if l3 + 20 > end:
                    short += 1
                    continue
                vec, *quanta = pfc_q(data, l3 + 2)
                for prio in range(8):
                    if vec >> prio & 1:
                        pause(prio, quanta[prio], ts)
            elif opcode == MAC_CONTROL_PAUSE:
                pause("global", u16(data, l3 + 2)[0], ts)
            continue
        else:
            continue
        # RoCEv2: BTH right after the 8-byte UDP header.
        bth = udp + 8
        opcode = data[bth]
        key = (src, dst, u16(data, udp)[0], int.from_bytes(data[bth + 5 : bth + 8], "big"))
        fs = flows.get(key)
        ts = sec + frac * tick
        if fs is None:
            fs = flows[key] = FlowStats(first_ts=ts)
        fs.packets += 1
        fs.last_ts = ts
        roce += 1
        if ecn == ECN_CE:
            fs.ce += 1
            roce_ce += 1
        if opcode == BTH_OPCODE_CNP:
            fs.cnp += 1
            cnp += 1

    summary.packets, summary.short = packets, short
    summary.roce_packets, summary.roce_ce, summary.cnp = roce, roce_ce, cnp
    summary.first_ts = first_ts
    if last_sec is not None:
        summary.last_ts = last_sec + last_frac * tick
    # Flow keys become printable addresses once, outside the loop.
    summary.flows = {
        ((_ip4 if len(s) == 4 else _ip6)(s), (_ip4 if len(d) == 4 else _ip6)(d), sp, qp): st
        for (s, d, sp, qp), st in flows.items()
    }
    return summary


def summarize_pcap(path: str | Path, link_gbps: float | None = None) -> PcapSummary:
    """Summarize the pcap file at ``path`` (memory-mapped, so large files are fine)."""
    path = Path(path)
    with path.open("rb") as fh:
        size = path.stat().st_size
        if size == 0:
            raise ParseError(str(path), 0, "", "empty file")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return summarize_pcap_bytes(mm, str(path), link_gbps)


def pcap_counters(
    summary: PcapSummary, node: str, port: int, ifname: str | None = None,
    timestamp: float | None = None,
) -> PortCounters:
    """The capture as one counter sample (source ``pcap``), named like the NIC's counters:
    ``pcap_prioN_pause`` frames, ``pcap_prioN_pause_quanta``, ``pcap_prioN_pause_duration``
    (microseconds, when the link speed is known), ``pcap_rocev2_packets``,
    ``pcap_rocev2_ce_packets``, ``pcap_cnp_packets``."""
    values: dict[str, int | None] = {}
    for prio, st in summary.pfc.items():
        name = f"prio{prio}" if isinstance(prio, int) else str(prio)
        values[f"pcap_{name}_pause"] = st.xoff
        values[f"pcap_{name}_pause_quanta"] = st.quanta
        dur = st.pause_s(summary.link_gbps)
        values[f"pcap_{name}_pause_duration"] = None if dur is None else round(dur * 1e6)
    values["pcap_rocev2_packets"] = summary.roce_packets
    values["pcap_rocev2_ce_packets"] = summary.roce_ce
    values["pcap_cnp_packets"] = summary.cnp
    ts = summary.last_ts if timestamp is None else timestamp
    return PortCounters(node=node, port=port, timestamp=ts if ts is not None else time.time(),
                        values=values, source="pcap", ifname=ifname)


def scapy_summary(path: str | Path, link_gbps: float | None = None) -> PcapSummary:
    """The same summary by scapy's full dissection: slow, for cross-checking small captures."""
    from scapy.all import IP, UDP, Dot1Q, Ether, IPv6, rdpcap  # noqa: F401
    from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause

    summary = PcapSummary(source=str(path), link_gbps=link_gbps)
    for pkt in rdpcap(str(path)):
        summary.packets += 1
        ts = float(pkt.time)
        summary.first_ts = ts if summary.first_ts is None else summary.first_ts
        summary.last_ts = ts
        if pkt.haslayer(MACControlClassBasedFlowControl):
            cb = pkt[MACControlClassBasedFlowControl]
            for prio in range(8):
                if getattr(cb, f"c{prio}_enabled"):
                    st = summary.pfc.setdefault(prio, PauseStats(first_ts=ts))
                    q = getattr(cb, f"c{prio}_pause_time")
                    st.frames += 1
                    st.quanta += q
                    st.xoff += 1 if q else 0
                    st.xon += 0 if q else 1
                    st.last_ts = ts
            continue
        if pkt.haslayer(MACControlPause):
            st = summary.pfc.setdefault("global", PauseStats(first_ts=ts))
            q = pkt[MACControlPause].pause_time
            st.frames += 1
            st.quanta += q
            st.xoff += 1 if q else 0
            st.xon += 0 if q else 1
            st.last_ts = ts
            continue
        ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
        if ip is None or not pkt.haslayer(UDP) or pkt[UDP].dport != ROCEV2_PORT:
            continue
        ecn = (ip.tos if ip.name == "IP" else ip.tc) & 3
        payload = bytes(pkt[UDP].payload)
        key = (ip.src, ip.dst, pkt[UDP].sport, int.from_bytes(payload[5:8], "big"))
        fs = summary.flows.setdefault(key, FlowStats(first_ts=ts))
        fs.packets += 1
        fs.last_ts = ts
        summary.roce_packets += 1
        if ecn == ECN_CE:
            fs.ce += 1
            summary.roce_ce += 1
        if payload and payload[0] == BTH_OPCODE_CNP:
            fs.cnp += 1
            summary.cnp += 1
    return summary
