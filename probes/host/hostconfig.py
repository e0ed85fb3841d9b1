"""Host configuration that makes a healthy fabric look slow, read from sysfs and procfs under ``root``.

Checks (one :class:`HostCheck` each, status ok / fail / unknown / n/a): ``unknown`` = it applies but
could not be read (not seen: a report with one is never a pass); ``n/a`` = nothing to check here (no
GPU on the host, no NUMA nodes, a setting this driver does not expose).

- ``gpudirect``: a peer-memory module (``nvidia_peermem``, ``nv_peer_mem``) in ``proc/modules``, or the
  NVIDIA open kernel module (``proc/driver/nvidia/version``) on a kernel >= 5.12 (dma-buf).
- ``pcie_link``: a NIC's ``current_link_width``/``current_link_speed`` below ``max_link_*``
  (drivers/pci/pci-sysfs.c: width ``"16"``, speed ``"16.0 GT/s PCIe"``).
- ``numa``: a NIC's ``numa_node`` shared by no GPU (``-1``, a single-node platform, or no GPU: n/a).
- ``pcie_acs``: ACS Request/Completion Redirect set on a PCIe bridge that a NIC shares with a GPU, read
  from the ACS extended capability (ID 0x000D) in the bridge's ``config`` file; unknown when only the
  first 256 bytes are readable (as a non-root user).
- ``roce_gid``: an Ethernet (RoCE) port with a RoCE v2 GID (``ports/N/gid_attrs/types/I`` = ``RoCE v2``);
  ``values`` hold the index of its IPv4 RoCE v2 GID so hosts can be compared.
- ``mtu``: each NIC netdev's ``mtu`` (compared across hosts by the analysis).
- ``traffic_class``: MLNX_OFED's ``tc/N/traffic_class`` where present, else n/a (the inbox driver has none).

Nothing here judges across hosts: values are kept so the analysis can.
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from typing import Any

from fabricdoc.model.records import HostCheck

PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
_BDF = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
ACS_CAP_ID = 0x000D
ACS_REQ_REDIR, ACS_CMPLT_REDIR = 1 << 2, 1 << 3


def _text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _int(text: str | None) -> int | None:
    try:
        return int(text, 0) if text is not None else None
    except ValueError:
        return None


def _speed(text: str | None) -> float | None:
    m = re.match(r"^(\d+(?:\.\d+)?) GT/s", text or "")
    return float(m.group(1)) if m else None


def pci_devices(root: Path) -> dict[str, dict[str, Any]]:
    """Every PCI function under ``root``: class, vendor, numa node and its bridges (nearest first)."""
    out: dict[str, dict[str, Any]] = {}
    base = root / "sys/bus/pci/devices"
    if not base.is_dir():
        return out
    for entry in sorted(base.iterdir()):
        real = Path(os.path.realpath(entry))
        bridges = [p.name for p in real.parents if _BDF.match(p.name)]
        out[entry.name] = {"class": _int(_text(real / "class")), "vendor": _int(_text(real / "vendor")),
                           "numa": _int(_text(real / "numa_node")), "path": real, "bridges": bridges}
    return out


def nics(root: Path) -> list[dict[str, Any]]:
    """RDMA devices (``sys/class/infiniband``) with their PCI address, ports and netdevs."""
    out = []
    base = root / "sys/class/infiniband"
    if not base.is_dir():
        return out
    for dev in sorted(base.iterdir()):
        pci = Path(os.path.realpath(dev / "device")).name
        netdevs = sorted(p.name for p in (dev / "device" / "net").iterdir()) if (dev / "device" / "net").is_dir() else []
        ports = sorted(int(p.name) for p in (dev / "ports").iterdir() if p.name.isdigit()) \
            if (dev / "ports").is_dir() else []
        out.append({"name": dev.name, "pci": pci if _BDF.match(pci) else None, "dir": dev, "ports": ports,
                    "netdevs": netdevs})
    return out


def roce_netdevs(root: str | Path) -> list[str]:
    """Netdevs of RDMA devices with an Ethernet (RoCE) port: where PFC must be configured."""
    out = []
    for nic in nics(Path(root)):
        if any(_text(nic["dir"] / "ports" / str(p) / "link_layer") == "Ethernet" for p in nic["ports"]):
            out += nic["netdevs"]
    return sorted(set(out))


def pci_ifnames(root: str | Path) -> dict[str, list[str]]:
    """PCI address -> netdev names, for mapping kernel messages to ports."""
    out: dict[str, list[str]] = {}
    base = Path(root) / "sys/class/net"
    if base.is_dir():
        for net in sorted(base.iterdir()):
            pci = Path(os.path.realpath(net / "device")).name if (net / "device").exists() else ""
            if _BDF.match(pci):
                out.setdefault(pci, []).append(net.name)
    return out


def _gpus(devices: dict[str, dict[str, Any]]) -> list[str]:
    return [bdf for bdf, d in devices.items()
            if d["vendor"] == 0x10DE and d["class"] is not None and d["class"] >> 8 in (0x0300, 0x0302)]


def acs_redirect(config: bytes) -> bool | None:
    """Whether ACS Request or Completion Redirect is on in a config space; None when unreadable."""
    if len(config) < 0x104:
        return None
    off, seen = 0x100, set()
    while off and off not in seen and off + 8 <= len(config):
        seen.add(off)
        header = struct.unpack_from("<I", config, off)[0]
        if header in (0, 0xFFFFFFFF):
            return False
        if header & 0xFFFF == ACS_CAP_ID:
            control = struct.unpack_from("<H", config, off + 6)[0]
            return bool(control & (ACS_REQ_REDIR | ACS_CMPLT_REDIR))
        off = (header >> 20) & 0xFFC
    return False


def _gpudirect(root: Path, node: str, have_gpu: bool) -> HostCheck:
    modules = _text(root / "proc/modules")
    if modules is None:
        return HostCheck(node, "gpudirect", "unknown", "host", "proc/modules unreadable")
    loaded = [m for m in PEERMEM_MODULES if re.search(rf"^{m}\s", modules, re.M)]
    if loaded:
        return HostCheck(node, "gpudirect", "ok", "host", f"{loaded[0]} loaded", {"via": loaded[0]})
    if not have_gpu:
        return HostCheck(node, "gpudirect", "n/a", "host", "no NVIDIA GPU seen")
    version = _text(root / "proc/driver/nvidia/version")
    release = _text(root / "proc/sys/kernel/osrelease")
    m = re.match(r"^(\d+)\.(\d+)", release or "")
    if version is not None and "Open Kernel Module" in version and m and (int(m[1]), int(m[2])) >= (5, 12):
        return HostCheck(node, "gpudirect", "ok", "host", "NVIDIA open kernel module on Linux >= 5.12 (dma-buf)",
                         {"via": "dma-buf"})
    if version is None:
        return HostCheck(node, "gpudirect", "unknown", "host", "no peer-memory module, NVIDIA driver version unreadable")
    return HostCheck(node, "gpudirect", "fail", "host",
                     "no peer-memory module (nvidia_peermem) loaded and no dma-buf capable driver: "
                     "GPUDirect RDMA off, NCCL stages through host memory")


def check_host(root: str | Path = "/", node: str = "localhost") -> list[HostCheck]:
    """Every check for the host whose sysfs/procfs are under ``root``."""
    root = Path(root)
    devices = pci_devices(root)
    gpus = _gpus(devices)
    out = [_gpudirect(root, node, bool(gpus))]
    gpu_numa = {devices[g]["numa"] for g in gpus if devices[g]["numa"] is not None and devices[g]["numa"] >= 0}
    for nic in nics(root):
        name, pci = nic["name"], nic["pci"]
        subject = f"{name} ({pci})" if pci else name
        dev = devices.get(pci) if pci else None
        out.append(_pcie_link(node, subject, dev))
        numa = dev["numa"] if dev else None
        if not gpus or (numa is not None and numa < 0):
            why = "no GPU seen" if not gpus else f"numa_node of {name} is -1 (the platform has one NUMA node)"
            out.append(HostCheck(node, "numa", "n/a", subject, why))
        elif numa is None or not gpu_numa:
            why = f"numa_node of {name} unreadable" if numa is None else "the GPUs' numa_node unreadable"
            out.append(HostCheck(node, "numa", "unknown", subject, why))
        elif numa in gpu_numa:
            out.append(HostCheck(node, "numa", "ok", subject, f"NUMA node {numa} has GPUs", {"numa": numa}))
        else:
            out.append(HostCheck(node, "numa", "fail", subject,
                                 f"{name} is on NUMA node {numa}, no GPU is (GPUs on {sorted(gpu_numa)})",
                                 {"numa": numa, "gpu_numa": sorted(gpu_numa)}))
        out.append(_acs(root, node, subject, dev, [devices[g] for g in gpus]))
        for port in nic["ports"]:
            out += _port_checks(node, name, nic["dir"] / "ports" / str(port), port)
        for ifname in nic["netdevs"]:
            mtu = _int(_text(root / "sys/class/net" / ifname / "mtu"))
            out.append(HostCheck(node, "mtu", "ok" if mtu else "unknown", ifname,
                                 f"mtu {mtu}" if mtu else "mtu unreadable", {"mtu": mtu} if mtu else {}))
    return out


def mtu_checks(node: str, mtus: dict[str, int], port_of: dict[str, int]) -> list[HostCheck]:
    """An ``mtu`` check per fabric data interface from the MTU netlink reported, with its fabric port
    (the analysis compares the same port across hosts: interface names may differ)."""
    return [HostCheck(node, "mtu", "ok", ifname, f"mtu {mtu}", {"mtu": mtu}, port=port_of.get(ifname))
            for ifname, mtu in sorted(mtus.items())]


def _pcie_link(node: str, subject: str, dev: dict[str, Any] | None) -> HostCheck:
    if dev is None:
        return HostCheck(node, "pcie_link", "unknown", subject, "PCI device not found")
    p = dev["path"]
    cw, mw = _int(_text(p / "current_link_width")), _int(_text(p / "max_link_width"))
    cs, ms = _speed(_text(p / "current_link_speed")), _speed(_text(p / "max_link_speed"))
    values = {"width": cw, "max_width": mw, "speed_gts": cs, "max_speed_gts": ms}
    if None in (cw, mw, cs, ms):
        return HostCheck(node, "pcie_link", "unknown", subject, "PCIe link width/speed not readable", values)
    if cw < mw or cs < ms:  # type: ignore[operator]
        return HostCheck(node, "pcie_link", "fail", subject,
                         f"PCIe link trained at x{cw} {cs:g} GT/s, below its x{mw} {ms:g} GT/s", values)
    return HostCheck(node, "pcie_link", "ok", subject, f"x{cw} {cs:g} GT/s", values)


def _acs(root: Path, node: str, subject: str, dev: dict[str, Any] | None, gpus: list[dict[str, Any]]) -> HostCheck:
    if dev is None:
        return HostCheck(node, "pcie_acs", "unknown", subject, "PCI device not found")
    if not gpus:
        return HostCheck(node, "pcie_acs", "n/a", subject, "no GPU seen")
    shared = [b for b in dev["bridges"] if any(b in g["bridges"] for g in gpus)]
    if not shared:
        return HostCheck(node, "pcie_acs", "ok", subject, "shares no PCIe bridge with a GPU (traffic crosses the CPU)")
    # The bridges on the way from the NIC up to the highest one it shares with a GPU.
    top = dev["bridges"].index(shared[-1])
    unknown = []
    for bridge in dev["bridges"][: top + 1]:
        try:
            config = (root / "sys/bus/pci/devices" / bridge / "config").read_bytes()
        except OSError:
            config = b""
        state = acs_redirect(config)
        if state:
            return HostCheck(node, "pcie_acs", "fail", subject,
                             f"ACS redirect on PCIe bridge {bridge} between the GPU and the NIC: "
                             "peer-to-peer traffic is sent up to the root complex", {"bridge": bridge})
        if state is None:
            unknown.append(bridge)
    if unknown:
        return HostCheck(node, "pcie_acs", "unknown", subject,
                         f"config space of {', '.join(unknown)} not readable (needs root)")
    return HostCheck(node, "pcie_acs", "ok", subject, "no ACS redirect on the shared bridges")


def _port_checks(node: str, dev: str, pdir: Path, port: int) -> list[HostCheck]:
    out = []
    layer = _text(pdir / "link_layer")
    subject = f"{dev}/{port}"
    if layer == "Ethernet":
        types_dir = pdir / "gid_attrs" / "types"
        entries = {}
        if types_dir.is_dir():
            for f in types_dir.iterdir():
                if f.name.isdigit():
                    t = _text(f)
                    if t:
                        entries[int(f.name)] = t
        if not entries:
            out.append(HostCheck(node, "roce_gid", "unknown", subject, "gid_attrs/types not readable", port=port))
        else:
            v2 = sorted(i for i, t in entries.items() if t == "RoCE v2")
            ipv4 = [i for i in v2 if (_text(pdir / "gids" / str(i)) or "").startswith("0000:0000:0000:0000:0000:ffff:")]
            if not v2:
                out.append(HostCheck(node, "roce_gid", "fail", subject, "no RoCE v2 GID (only RoCE v1/IB)", port=port))
            else:
                out.append(HostCheck(node, "roce_gid", "ok", subject, f"RoCE v2 GIDs at {v2}",
                                     {"v2": v2, "v2_ipv4": ipv4[0] if ipv4 else None}, port=port))
    tc = _text(pdir.parent.parent / "tc" / str(port) / "traffic_class")
    if layer == "Ethernet":
        out.append(HostCheck(node, "traffic_class", "ok" if tc else "n/a", subject,
                             f"traffic_class {tc}" if tc else "tc/N/traffic_class not present (MLNX_OFED only)",
                             {"traffic_class": tc} if tc else {}, port=port))
    return out
