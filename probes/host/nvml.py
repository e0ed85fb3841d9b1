"""GPU health from NVML (nvidia-ml-py): Xid errors, ECC, retired/remapped memory, NVLink and PCIe
errors, throttle reasons, and which RDMA NIC sits closest to each GPU on PCIe.

Every NVML call goes through one guard: a function the driver does not
support (``NVML_ERROR_NOT_SUPPORTED``, or missing from an old nvidia-ml-py) is
listed in ``values["unsupported"]`` and its fields are ``None``; any other NVML
error is kept in ``values["errors"]``. No library or driver raises
``ProbeError(status="unsupported")`` with one clear line. The module is
injectable (``nvml=``) so the mapping is tested with a stand-in.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from fabricdoc.errors import ProbeError
from fabricdoc.model.records import GpuHealth

NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED
FUNCTION_NOT_FOUND = 13  # NVML_ERROR_FUNCTION_NOT_FOUND
XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError

THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
NVLINK_COUNTERS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data", 4: "ecc_data"}


class _Unsupported(Exception):
    pass


class _Guard:
    """Calls NVML functions, sorting failures into unsupported and errors."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.unsupported: list[str] = []
        self.errors: dict[str, str] = {}

    def __call__(self, what: str, fn: str, *args: Any) -> Any:
        func = getattr(self.nvml, fn, None)
        if func is None:
            self._unsupported(what)
            raise _Unsupported(what)
        try:
            return func(*args)
        except self.nvml.NVMLError as exc:
            code = getattr(exc, "value", None)
            if code in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                self._unsupported(what)
            else:
                self.errors[what] = _text(exc)
            raise _Unsupported(what) from exc

    def _unsupported(self, what: str) -> None:
        if what not in self.unsupported:
            self.unsupported.append(what)

    def get(self, what: str, fn: str, *args: Any) -> Any:
        try:
            return self(what, fn, *args)
        except _Unsupported:
            return None


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def _load() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise ProbeError("nvml", "no NVML: nvidia-ml-py is not installed", "unsupported") from exc
    return pynvml


def throttle_names(mask: int | None) -> list[str] | None:
    """Names of the set throttle-reason bits (``None`` when unknown)."""
    if mask is None:
        return None
    names = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_BITS)
    if unknown:
        names.append(f"0x{unknown:x}")
    return names


def sysfs_bdf(bus_id: str) -> str:
    """NVML ``00000000:17:00.0`` -> sysfs ``0000:17:00.0``."""
    text = _text(bus_id).strip().lower()
    domain, _, rest = text.partition(":")
    return f"{int(domain, 16):04x}:{rest}"


def pci_relation(gpu_path: str, nic_path: str, gpu_numa: int | None = None,
                 nic_numa: int | None = None) -> str:
    """nvidia-smi-topo style relation of two PCI devices from their sysfs device paths.

    ``PIX`` both under the same PCIe bridge, ``PXB`` under a common bridge deeper
    up, ``PHB`` only the host bridge in common, ``NODE`` different host bridges in
    one NUMA node, ``SYS`` across NUMA nodes (or unknown).
    """
    g = [p for p in gpu_path.split("/") if p]
    n = [p for p in nic_path.split("/") if p]
    common = 0
    for a, b in zip(g, n, strict=False):
        if a != b:
            break
        common += 1
    shared = g[:common]
    host_bridges = [i for i, part in enumerate(shared) if part.startswith("pci")]
    if not host_bridges:
        if gpu_numa is not None and gpu_numa == nic_numa and gpu_numa >= 0:
            return "NODE"
        return "SYS"
    below_host = common - host_bridges[-1] - 1  # bridges shared beneath the host bridge
    if below_host <= 0:
        return "PHB"
    if len(g) - common == 1 and len(n) - common == 1:
        return "PIX"
    return "PXB"


def _numa(dev_path: Path) -> int | None:
    try:
        return int((dev_path / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None


def rdma_nics(sysfs_root: str | Path = "/") -> dict[str, Path]:
    """RDMA device name -> resolved PCI device directory under ``sysfs_root``."""
    base = Path(sysfs_root) / "sys/class/infiniband"
    out: dict[str, Path] = {}
    if not base.is_dir():
        return out
    for dev in sorted(base.iterdir()):
        link = dev / "device"
        if link.exists():
            out[dev.name] = Path(os.path.realpath(link))
    return out


def nic_affinity(bus_id: str, sysfs_root: str | Path = "/") -> dict[str, str] | None:
    """RDMA NIC -> relation to the GPU at ``bus_id``; None when sysfs has no such GPU."""
    gpu = Path(sysfs_root) / "sys/bus/pci/devices" / sysfs_bdf(bus_id)
    if not gpu.exists():
        return None
    gpu_real = Path(os.path.realpath(gpu))
    root = str(Path(sysfs_root).resolve())
    out = {}
    for name, nic in rdma_nics(sysfs_root).items():
        out[name] = pci_relation(str(gpu_real)[len(root):], str(nic)[len(root):],
                                 _numa(gpu_real), _numa(nic))
    return out


def _gpu_values(nvml: Any, guard: _Guard, handle: Any, sysfs_root: str | Path | None) -> dict:
    v: dict[str, Any] = {}
    v["name"] = _text(guard.get("name", "nvmlDeviceGetName", handle) or "") or None
    pci = guard.get("pci_info", "nvmlDeviceGetPciInfo", handle)
    bus_id = _text(pci.busId) if pci is not None else None
    v["pci_bus_id"] = bus_id
    for counter, cname in ((0, "volatile"), (1, "aggregate")):  # NVML_VOLATILE_ECC, NVML_AGGREGATE_ECC
        for etype, ename in ((0, "corrected"), (1, "uncorrected")):
            v[f"ecc_{cname}_{ename}"] = guard.get(
                f"ecc_{cname}_{ename}", "nvmlDeviceGetTotalEccErrors", handle, etype, counter)
    for cause, cname in ((0, "sbe"), (1, "dbe")):
        pages = guard.get(f"retired_pages_{cname}", "nvmlDeviceGetRetiredPages", handle, cause)
        v[f"retired_pages_{cname}"] = None if pages is None else len(pages)
    pending = guard.get("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    v["retired_pages_pending"] = None if pending is None else bool(pending)
    rows = guard.get("remapped_rows", "nvmlDeviceGetRemappedRows", handle)
    if rows is not None:
        corr, unc, is_pending, failed = rows
        v.update(remapped_rows_correctable=int(corr), remapped_rows_uncorrectable=int(unc),
                 remapped_rows_pending=bool(is_pending), remapped_rows_failure=bool(failed))
    else:
        v.update(remapped_rows_correctable=None, remapped_rows_uncorrectable=None,
                 remapped_rows_pending=None, remapped_rows_failure=None)
    v["pcie_replay_counter"] = guard.get("pcie_replay_counter", "nvmlDeviceGetPcieReplayCounter", handle)
    fn = ("nvmlDeviceGetCurrentClocksEventReasons"
          if hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons")
          else "nvmlDeviceGetCurrentClocksThrottleReasons")
    mask = guard.get("throttle_reasons", fn, handle)
    v["throttle_reasons_mask"] = None if mask is None else int(mask)
    v["throttle_reasons"] = throttle_names(v["throttle_reasons_mask"])
    v["nvlink"] = _nvlinks(nvml, guard, handle)
    v["nic_affinity"] = nic_affinity(bus_id, sysfs_root) if bus_id and sysfs_root else None
    return v


def _nvlinks(nvml: Any, guard: _Guard, handle: Any) -> dict[str, dict[str, Any]] | None:
    """Per NVLink (keys are link numbers as text): state and the DL error counters."""
    links: dict[str, dict[str, Any]] = {}
    max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))
    probe = _Guard(nvml)  # a link that does not exist answers NOT_SUPPORTED or INVALID_ARGUMENT
    for link in range(max_links):
        try:
            state = probe("nvlink_state", "nvmlDeviceGetNvLinkState", handle, link)
        except _Unsupported:
            if link == 0:
                guard._unsupported("nvlink")
            break
        entry: dict[str, Any] = {"state": "up" if state else "down"}
        for counter, name in NVLINK_COUNTERS.items():
            entry[name] = guard.get(f"nvlink_{name}", "nvmlDeviceGetNvLinkErrorCounter",
                                    handle, link, counter)
        links[str(link)] = entry
    return links or None


def wait_xids(nvml: Any, handles: list[Any], uuids: list[str | None], wait_s: float) -> tuple[
        dict[int, list[dict[str, Any]]], list[int], str | None]:
    """Xid critical errors seen within ``wait_s``: index -> [{xid, time}], the GPUs that
    could not register, and an error line (or None)."""
    events: dict[int, list[dict[str, Any]]] = {}
    unregistered: list[int] = []
    try:
        evset = nvml.nvmlEventSetCreate()
    except (nvml.NVMLError, AttributeError) as exc:
        return events, list(range(len(handles))), f"xid events: {_text(exc)}"
    try:
        for i, h in enumerate(handles):
            try:
                nvml.nvmlDeviceRegisterEvents(h, XID_CRITICAL, evset)
            except nvml.NVMLError:
                unregistered.append(i)
        if len(unregistered) == len(handles):
            return events, unregistered, None
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                data = nvml.nvmlEventSetWait(evset, max(1, int(left * 1000)))
            except nvml.NVMLError as exc:
                if getattr(exc, "value", None) == 10:  # NVML_ERROR_TIMEOUT
                    break
                return events, unregistered, f"xid events: {_text(exc)}"
            try:
                uuid = _text(nvml.nvmlDeviceGetUUID(data.device))
                index = uuids.index(uuid)
            except (nvml.NVMLError, ValueError):
                index = -1
            events.setdefault(index, []).append({"xid": int(data.eventData), "time": time.time()})
    finally:
        with contextlib.suppress(nvml.NVMLError, AttributeError):
            nvml.nvmlEventSetFree(evset)
    return events, unregistered, None


def collect_gpus(host: str, nvml: Any = None, xid_wait_s: float = 0.0,
                 sysfs_root: str | Path | None = "/") -> list[GpuHealth]:
    """One GpuHealth per GPU. No NVML library/driver: ProbeError(status="unsupported").

    ``xid_wait_s`` > 0 listens that long for Xid critical-error events (NVML keeps
    no history of them). ``sysfs_root`` locates RDMA NICs for PCIe affinity
    (None skips it).
    """
    nvml = nvml if nvml is not None else _load()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise ProbeError("nvml", f"no NVML: {_text(exc)}", "unsupported") from exc
    try:
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as exc:
            raise ProbeError("nvml", f"cannot count GPUs: {_text(exc)}") from exc
        gpus: list[GpuHealth] = []
        handles: list[Any] = []
        uuids: list[str | None] = []
        values: list[dict[str, Any]] = []
        guards: list[_Guard] = []
        indices: list[int] = []
        for index in range(count):
            guard = _Guard(nvml)
            try:
                handle = guard("handle", "nvmlDeviceGetHandleByIndex", index)
            except _Unsupported:
                gpus.append(GpuHealth(host, index, None, "error",
                                      error=guard.errors.get("handle", "handle not supported")))
                continue
            uuid = guard.get("uuid", "nvmlDeviceGetUUID", handle)
            handles.append(handle)
            uuids.append(_text(uuid) if uuid is not None else None)
            values.append(_gpu_values(nvml, guard, handle, sysfs_root))
            guards.append(guard)
            indices.append(index)
        xids, unregistered, xid_error = ({}, [], None)
        if xid_wait_s > 0 and handles:
            xids, unregistered, xid_error = wait_xids(nvml, handles, uuids, xid_wait_s)
        for i, (index, uuid, v, guard) in enumerate(zip(indices, uuids, values, guards, strict=True)):
            if xid_wait_s > 0:
                v["xid_events"] = None if i in unregistered else xids.get(i, [])
                if i in unregistered:
                    guard._unsupported("xid_events")
                if xid_error:
                    guard.errors["xid_events"] = xid_error
            v["unsupported"] = guard.unsupported
            v["errors"] = guard.errors
            status = "error" if guard.errors else "ok"
            error = "; ".join(f"{k}: {e}" for k, e in guard.errors.items()) or None
            gpus.append(GpuHealth(host, index, uuid, status, v, error))
        return sorted(gpus, key=lambda g: g.index)
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
