"""FakeNvml: a STAND-IN for the pynvml module (no GPU here), answering from a JSON description.

It reuses pynvml's real error classes and constants so the probe's error
handling is exercised with the real codes; only the device answers are made up
(tests/data/nvml/two_gpus.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

DATA = Path(__file__).resolve().parents[1] / "data" / "nvml"


class FakeNvml:
    """Quacks like ``pynvml`` for the calls fabricdoc.probes.nvml makes."""

    NVMLError = pynvml.NVMLError
    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, config: dict[str, Any] | None = None, init_error: int | None = None) -> None:
        self.config = config if config is not None else json.loads((DATA / "two_gpus.json").read_text())
        self.gpus = self.config["gpus"]
        self.init_error = init_error
        self.calls: list[str] = []
        self.initialized = False
        self.shutdown_called = False
        self._pending_xids: list[tuple[int, int]] = []

    # -- helpers ----------------------------------------------------------
    def _gpu(self, handle: Any, fn: str) -> dict[str, Any]:
        self.calls.append(fn)
        gpu = self.gpus[handle.index]
        if fn in gpu.get("unsupported", []):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return gpu

    # -- library ----------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise pynvml.NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.shutdown_called = True

    def nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any:
        if index >= len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return SimpleNamespace(index=index)

    # -- identity ---------------------------------------------------------
    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return self._gpu(h, "nvmlDeviceGetUUID")["uuid"]

    def nvmlDeviceGetName(self, h: Any) -> str:
        return self._gpu(h, "nvmlDeviceGetName")["name"]

    def nvmlDeviceGetPciInfo(self, h: Any) -> Any:
        return SimpleNamespace(busId=self._gpu(h, "nvmlDeviceGetPciInfo")["busId"])

    # -- memory -----------------------------------------------------------
    def nvmlDeviceGetTotalEccErrors(self, h: Any, error_type: int, counter_type: int) -> int:
        ecc = self._gpu(h, "nvmlDeviceGetTotalEccErrors")["ecc"]
        counter = "volatile" if counter_type == pynvml.NVML_VOLATILE_ECC else "aggregate"
        kind = "corrected" if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED else "uncorrected"
        return ecc[counter][kind]

    def nvmlDeviceGetRetiredPages(self, h: Any, cause: int) -> list[int]:
        return self._gpu(h, "nvmlDeviceGetRetiredPages")["retired_pages"][str(cause)]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: Any) -> int:
        return self._gpu(h, "nvmlDeviceGetRetiredPagesPendingStatus")["retired_pages_pending"]

    def nvmlDeviceGetRemappedRows(self, h: Any) -> tuple[int, int, int, int]:
        return tuple(self._gpu(h, "nvmlDeviceGetRemappedRows")["remapped_rows"])

    # -- links and bus ----------------------------------------------------
    def nvmlDeviceGetPcieReplayCounter(self, h: Any) -> int:
        return self._gpu(h, "nvmlDeviceGetPcieReplayCounter")["pcie_replay_counter"]

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: Any) -> int:
        return self._gpu(h, "nvmlDeviceGetCurrentClocksEventReasons")["throttle_reasons"]

    def nvmlDeviceGetNvLinkState(self, h: Any, link: int) -> int:
        nv = self._gpu(h, "nvmlDeviceGetNvLinkState")["nvlink"]
        if link >= nv["count"]:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return 0 if link in nv.get("down", []) else 1

    def nvmlDeviceGetNvLinkErrorCounter(self, h: Any, link: int, counter: int) -> int:
        return self._gpu(h, "nvmlDeviceGetNvLinkErrorCounter")["nvlink"]["errors"][str(link)][counter]

    # -- Xid events -------------------------------------------------------
    def nvmlEventSetCreate(self) -> Any:
        return SimpleNamespace(registered=[])

    def nvmlDeviceRegisterEvents(self, h: Any, types: int, evset: Any) -> None:
        gpu = self._gpu(h, "nvmlDeviceRegisterEvents")
        evset.registered.append(h.index)
        self._pending_xids += [(h.index, x) for x in gpu.get("xids", [])]

    def nvmlEventSetWait(self, evset: Any, timeout_ms: int) -> Any:
        if not self._pending_xids:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_TIMEOUT)
        index, xid = self._pending_xids.pop(0)
        return SimpleNamespace(device=SimpleNamespace(index=index), eventData=xid,
                               eventType=pynvml.nvmlEventTypeXidCriticalError)

    def nvmlEventSetFree(self, evset: Any) -> None:
        pass
