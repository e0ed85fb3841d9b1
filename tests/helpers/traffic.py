"""ECN-capable UDP traffic for the congestion tests, run inside a namespace with ``ip netns exec``.

``send DST PORT SECONDS MBPS``: ECT(0) datagrams at about MBPS for SECONDS, then
``STOP`` datagrams sent Not-ECT. ``recv PORT IDLE_S``: counts datagrams and CE marks
(IP_RECVTOS), prints ``{"packets": n, "ce": n, "ect0": n}`` after STOP or when
nothing arrived for IDLE_S seconds; prints ``ready`` on stderr once bound.
"""

from __future__ import annotations

import json
import socket
import sys
import time

ECT0 = 0x02
CE = 0x03


def send(dst: str, port: int, seconds: float, mbps: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECT0)
    payload = b"\x00" * 1200
    interval = len(payload) * 8 / (mbps * 1e6)
    end = time.monotonic() + seconds
    next_at = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < end:
        if now < next_at:
            time.sleep(min(next_at - now, 0.001))
            continue
        try:
            s.sendto(payload, (dst, port))
            sent += 1
        except OSError:
            pass  # local queue full: the point is to overload the link
        next_at += interval
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0)  # Not-ECT: never marked, never counted as CE
    for _ in range(5):
        s.sendto(b"STOP", (dst, port))
        time.sleep(0.05)
    print(json.dumps({"sent": sent}))


def recv(port: int, idle_s: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    s.bind(("0.0.0.0", port))
    s.settimeout(idle_s)
    print("ready", file=sys.stderr, flush=True)
    counts = {"packets": 0, "ce": 0, "ect0": 0}
    try:
        while True:
            data, anc, _flags, _addr = s.recvmsg(2048, socket.CMSG_SPACE(1))
            if data == b"STOP":
                break
            counts["packets"] += 1
            for level, kind, value in anc:
                if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
                    ecn = value[0] & 3
                    counts["ce"] += ecn == CE
                    counts["ect0"] += ecn == ECT0
    except TimeoutError:
        pass
    print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]))
    else:
        recv(int(sys.argv[2]), float(sys.argv[3]))
