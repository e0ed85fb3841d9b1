"""Host-side RDMA port counters and state from ``/sys/class/infiniband/<dev>/ports/<n>/``.

Formats are the kernel's (drivers/infiniband/core/sysfs.c): ``state`` is
``"4: ACTIVE"``, ``phys_state`` ``"5: LinkUp"``, ``rate`` ``"200 Gb/sec (4X HDR)"``,
``link_layer`` ``InfiniBand`` or ``Ethernet``; a counter the PMA cannot give
reads ``N/A (no PMA)`` (kept as ``None``). ``port_xmit_data``/``port_rcv_data``
count 4-byte words. ``hw_counters/`` holds the driver's counters (mlx5:
``np_ecn_marked_roce_packets``, ``np_cnp_sent``, ``rp_cnp_handled``,
``out_of_sequence``, ``packet_seq_err``, ``local_ack_timeout_err``,
``implied_nak_seq_err``...). Everything is read under a ``root`` path so tests
run on a fixture tree laid out like a real host.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.counters import register_problem
from fabricdoc.model.inputs import BadNumber, decode, read_float, read_int
from fabricdoc.model.records import PortCounters, PortState

SYSFS_IB = "sys/class/infiniband"

# Register widths of the PMA counters as sysfs.c declares them (ext set: 64-bit data/packets).
SYSFS_WIDTHS = {
    "symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16, "port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4, "excessive_buffer_overrun_errors": 4, "VL15_dropped": 16,
    "port_xmit_wait": 32, "port_xmit_data": 64, "port_rcv_data": 64, "port_xmit_packets": 64,
    "port_rcv_packets": 64, "unicast_xmit_packets": 64, "unicast_rcv_packets": 64,
    "multicast_xmit_packets": 64, "multicast_rcv_packets": 64,
}
# mlx5 Q counters are 32-bit big-endian registers (counters.c reads be32).
HW_WIDTHS = {
    name: 32 for name in (
        "out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err",
        "duplicate_request", "rnr_nak_retry_err", "out_of_buffer", "rx_write_requests",
        "rx_read_requests", "rx_atomic_requests",
    )
}
STATE_NAMES = {"DOWN": "Down", "INIT": "Init", "ARMED": "Armed", "ACTIVE": "Active",
               "ACTIVE_DEFER": "ActiveDefer", "NOP": "NOP"}
_RATE = re.compile(r"^(\d+(?:\.\d+)?) Gb/sec \((\d+)X(?: ([A-Z0-9]+))?\)$")
_SKIP_HW = {"lifespan"}


def parse_enum(text: str, source: str) -> tuple[int, str]:
    """``"4: ACTIVE"`` -> ``(4, "ACTIVE")`` (the kernel's enums are below 256)."""
    line = text.strip()
    num, sep, name = line.partition(": ")
    try:
        if not sep:
            raise BadNumber("no ': '")
        return read_int(num, "state", 0, 255), name.strip()
    except BadNumber:
        raise ParseError(source, 1, line[:80], "expected '<number>: <name>'") from None


# An InfiniBand or Ethernet port has 1-12 lanes (IBTA: 1X, 2X, 4X, 8X, 12X) and runs below 10 Tb/s.
MAX_LANES = 12
MAX_RATE_GBPS = 10_000.0


def parse_rate(text: str, source: str) -> tuple[float, int, str | None]:
    """``"200 Gb/sec (4X HDR)"`` -> ``(200.0, 4, "HDR")``: total Gb/s, lanes, speed name."""
    line = text.strip()
    m = _RATE.match(line) if len(line) <= 80 else None
    if m is None:
        raise ParseError(source, 1, line[:80], "expected '<n> Gb/sec (<w>X <speed>)'")
    try:
        return (read_float(m.group(1), "rate", 0.0, MAX_RATE_GBPS), read_int(m.group(2), "lanes", 1, MAX_LANES),
                m.group(3))
    except BadNumber as exc:
        raise ParseError(source, 1, line[:80], str(exc)) from None


def parse_counter(text: str, source: str) -> int | None:
    """A counter file: an integer, or ``N/A ...`` (the port has no PMA) as None."""
    line = text.strip()
    if line.startswith("N/A"):
        return None
    try:
        return read_int(line, "counter")
    except BadNumber as exc:
        raise ParseError(source, 1, line[:80], f"not a 64-bit register value: {exc}") from None


def format_guid(text: str) -> str:
    """sysfs ``248a:0703:005a:bc10`` -> fabricdoc's ``0x248a0703005abc10``."""
    return "0x" + text.strip().replace(":", "").lower()


def _read(path: Path, errors: list[str], root: Path) -> str | None:
    """A sysfs file's text (sysfs files are a page at most); an unreadable or undecodable one is noted."""
    try:
        with path.open("rb") as fh:
            data = fh.read(65536)
        return decode(data, str(path.relative_to(root)))
    except OSError as exc:
        errors.append(f"{path.relative_to(root)}: {exc.strerror or exc}")
    except ParseError as exc:
        errors.append(str(exc))
    return None


def read_tree(root: str | Path = "/") -> dict[str, Any]:
    """Raw text of every device and port file under ``root``/sys/class/infiniband.

    Returns ``{"devices": {dev: {"node_guid", "node_desc", "ports": {n: {...}}}},
    "errors": [one line per unreadable file]}``; an unreadable file is left out and
    noted, never fatal. A missing tree gives no devices.
    """
    root = Path(root)
    base = root / SYSFS_IB
    errors: list[str] = []
    devices: dict[str, Any] = {}
    if not base.is_dir():
        return {"devices": devices, "errors": errors, "present": False}
    for dev_dir in sorted(base.iterdir()):
        dev: dict[str, Any] = {"ports": {}}
        for name in ("node_guid", "node_desc", "node_type"):
            if (dev_dir / name).exists():
                dev[name] = _read(dev_dir / name, errors, root)
        ports_dir = dev_dir / "ports"
        try:
            port_dirs = sorted(ports_dir.iterdir(), key=lambda p: (len(p.name), p.name))
        except OSError as exc:
            errors.append(f"{ports_dir.relative_to(root)}: {exc.strerror or exc}")
            port_dirs = []
        for pdir in port_dirs:
            if not pdir.name.isdigit() or len(pdir.name) > 3:  # ports are 1-255
                continue
            port: dict[str, Any] = {"counters": {}, "hw_counters": {}}
            for name in ("state", "phys_state", "rate", "link_layer", "lid"):
                if (pdir / name).exists():
                    port[name] = _read(pdir / name, errors, root)
            for group in ("counters", "hw_counters"):
                gdir = pdir / group
                if not gdir.is_dir():
                    continue
                for f in sorted(gdir.iterdir()):
                    if f.name in _SKIP_HW:
                        continue
                    port[group][f.name] = _read(f, errors, root)
            ndev = pdir / "gid_attrs" / "ndevs" / "0"
            if ndev.exists():
                port["ndev"] = _read(ndev, errors, root)
            dev["ports"][int(pdir.name)] = port
        devices[dev_dir.name] = dev
    return {"devices": devices, "errors": errors, "present": True}


def parse_tree(
    raw: dict[str, Any], host: str | None = None, timestamp: float | None = None
) -> tuple[list[PortCounters], list[PortState], list[str]]:
    """Records from :func:`read_tree`'s capture, plus one-line problems.

    A port's node is its HCA's node GUID (``0x...``, as the fabric names it); when
    the GUID is unreadable it is ``host:dev``. A file that does not parse is
    reported and its value left ``None``; the other records are kept.
    """
    ts = time.time() if timestamp is None else timestamp
    counters: list[PortCounters] = []
    states: list[PortState] = []
    problems: list[str] = list(raw.get("errors", []))
    for dev_name, dev in raw.get("devices", {}).items():
        guid_text = dev.get("node_guid")
        node = format_guid(guid_text) if guid_text else f"{host or 'localhost'}:{dev_name}"
        for port_no, port in sorted(dev.get("ports", {}).items()):
            where = f"{SYSFS_IB}/{dev_name}/ports/{port_no}"
            values: dict[str, int | None] = {}
            widths: dict[str, int] = {}
            for group, table in (("counters", SYSFS_WIDTHS), ("hw_counters", HW_WIDTHS)):
                for name, text in port.get(group, {}).items():
                    if text is None:
                        values[name] = None
                        continue
                    try:
                        values[name] = parse_counter(text, f"{where}/{group}/{name}")
                    except ParseError as exc:
                        problems.append(str(exc))
                        values[name] = None
                    if name in table:
                        widths[name] = table[name]
            ifname = port.get("ndev").strip() if port.get("ndev") else None
            for name, value in values.items():
                why = register_problem(name, value, widths.get(name))
                if why:
                    problems.append(f"{where}/{name}: {value}: {why}")
                    values[name] = None
            counters.append(PortCounters(node=node, port=int(port_no), timestamp=ts, values=values,
                                         source="sysfs", width_bits=widths, ifname=ifname))
            state = phys = None
            lanes = lane_gbps = None
            try:
                if port.get("state"):
                    state = STATE_NAMES.get(parse_enum(port["state"], f"{where}/state")[1])
            except ParseError as exc:
                problems.append(str(exc))
            try:
                if port.get("phys_state"):
                    phys = parse_enum(port["phys_state"], f"{where}/phys_state")[1]
            except ParseError as exc:
                problems.append(str(exc))
            try:
                if port.get("rate"):
                    gbps, lanes, _speed = parse_rate(port["rate"], f"{where}/rate")
                    lane_gbps = gbps / lanes
            except ParseError as exc:
                problems.append(str(exc))
            if state is None and port.get("state") and len(port["state"]) <= 80:
                state = port["state"].strip()
            states.append(PortState(node=node, port=int(port_no), state=state or "Unknown",
                                    phys_state=phys, lanes=lanes, lane_gbps=lane_gbps,
                                    source="sysfs", ifname=ifname))
    return counters, states, problems
