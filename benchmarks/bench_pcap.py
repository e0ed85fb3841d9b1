"""Packets per second of fabricdoc's lean pcap reader on a large generated capture.

Writes a classic pcap of N packets (default 1,000,000) with ``struct`` (scapy
would take minutes): RoCEv2 data packets over 64 flows, every 10th CE-marked,
every 50th a CNP, a PFC frame every 100 packets, plus plain UDP and TCP. Then
times :func:`fabricdoc.probes.pcap.summarize_pcap` and prints the rate.
Target: at least 200k packets/s. Usage: python benchmarks/bench_pcap.py [N]
"""

from __future__ import annotations

import struct
import sys
import tempfile
import time
from pathlib import Path

from fabricdoc.probes.host.pcap import summarize_pcap

MAC = bytes.fromhex("020000000001") + bytes.fromhex("020000000002")


def _ipv4(tos: int, proto: int, src: int, dst: int, payload: bytes) -> bytes:
    total = 20 + len(payload)
    return struct.pack(">BBHHHBBH4s4s", 0x45, tos, total, 0, 0x4000, 64, proto, 0,
                       src.to_bytes(4, "big"), dst.to_bytes(4, "big")) + payload


def _roce(flow: int, opcode: int) -> bytes:
    bth = struct.pack(">BBHI I", opcode, 0, 0xFFFF, flow & 0xFFFFFF, 0)
    udp = struct.pack(">HHHH", 49152 + flow, 4791, 8 + len(bth) + 64, 0)
    return udp + bth + b"\x00" * 64


def frames() -> list[tuple[bytes, str]]:
    """The repeating set of frames with what each one is."""
    out = []
    pfc = bytes.fromhex("0180c2000001020000000003") + struct.pack(
        ">HHH8H", 0x8808, 0x0101, 0x0008, 0, 0, 0, 0xFFFF, 0, 0, 0, 0) + b"\x00" * 26
    for i in range(100):
        if i == 99:
            out.append((pfc, "pfc"))
            continue
        flow = i % 64
        if i % 50 == 0:
            payload = _ipv4(0x02, 17, 0x0A000001 + flow, 0x0A000100, _roce(flow, 0x81))
            kind = "cnp"
        elif i % 10 == 0:
            payload = _ipv4(0x03, 17, 0x0A000001 + flow, 0x0A000100, _roce(flow, 0x0A))
            kind = "ce"
        elif i % 7 == 0:
            payload = _ipv4(0x00, 6, 0x0A000001, 0x0A000100, b"\x00" * 40)
            kind = "tcp"
        else:
            payload = _ipv4(0x02, 17, 0x0A000001 + flow, 0x0A000100, _roce(flow, 0x0A))
            kind = "roce"
        out.append((MAC + b"\x08\x00" + payload, kind))
    return out


def write_capture(path: Path, count: int) -> dict[str, int]:
    """Write ``count`` packets; return how many of each kind were written."""
    group = frames()
    expect: dict[str, int] = {}
    with path.open("wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        chunk = bytearray()
        for n in range(count):
            frame, kind = group[n % len(group)]
            expect[kind] = expect.get(kind, 0) + 1
            chunk += struct.pack("<IIII", 1_700_000_000 + n // 1_000_000, n % 1_000_000,
                                 len(frame), len(frame))
            chunk += frame
            if len(chunk) > 1 << 22:
                fh.write(chunk)
                chunk.clear()
        fh.write(chunk)
    return expect


def main(argv: list[str]) -> int:
    count = int(argv[1]) if len(argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory(prefix="fdh-bench-") as tmp:
        path = Path(tmp) / "large.pcap"
        t0 = time.perf_counter()
        expect = write_capture(path, count)
        t1 = time.perf_counter()
        summary = summarize_pcap(path, link_gbps=100.0)
        t2 = time.perf_counter()
    roce = expect.get("roce", 0) + expect.get("ce", 0) + expect.get("cnp", 0)
    ok = (summary.packets == count and summary.roce_packets == roce
          and summary.roce_ce == expect.get("ce", 0) and summary.cnp == expect.get("cnp", 0)
          and summary.pfc_frames == expect.get("pfc", 0))
    rate = count / (t2 - t1)
    print(f"wrote {count:,} packets ({path.name}) in {t1 - t0:.2f}s")
    print(f"read  {count:,} packets in {t2 - t1:.2f}s: {rate:,.0f} packets/s "
          f"(target 200,000) counts {'match' if ok else 'DO NOT match'}")
    print(f"  rocev2={summary.roce_packets:,} ce={summary.roce_ce:,} cnp={summary.cnp:,} "
          f"pfc={summary.pfc_frames:,} flows={len(summary.flows)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
