"""GPU health mapping, tested with the FakeNvml stand-in (no GPU here), "no NVML" included."""

from __future__ import annotations

import os

import pynvml
import pytest
from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.host import nvml

from fabricdoc.model.records import ProbeStatus
from tests.helpers.nvml_standin import FakeNvml


@pytest.mark.parametrize("code", [pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, pynvml.NVML_ERROR_DRIVER_NOT_LOADED])
def test_no_nvml_library_or_driver_is_an_unsupported_probe_run_and_no_gpu_records(code):
    health = HealthRecorder()
    found = health.call("nvml", "node1", lambda: nvml.collect_gpus("node1", FakeNvml(init_error=code), sysfs_root=None))
    assert found is None  # nothing to judge: no GpuHealth record, so no GPU finding can come of it
    (run,) = health.runs
    assert (run.probe, run.target, run.status) == ("nvml", "node1", ProbeStatus.UNSUPPORTED)
    assert run.error.startswith("nvml: no NVML") and str(pynvml.NVMLError(code)) in run.error


def test_health_fields_map_from_nvml_calls():
    fake = FakeNvml()
    gpus = nvml.collect_gpus("node1", fake, sysfs_root=None)
    assert fake.shutdown_called
    g0, g1 = gpus
    assert (g0.index, g0.uuid, g0.status) == (0, "GPU-5b1f6a0e-3c2d-4e1b-9a7f-0c1d2e3f4a5b", "ok")
    v = g0.values
    assert v["ecc_volatile_corrected"] == 12 and v["ecc_aggregate_uncorrected"] == 1
    assert v["retired_pages_sbe"] == 0 and v["retired_pages_pending"] is False
    assert (v["remapped_rows_correctable"], v["remapped_rows_uncorrectable"]) == (3, 1)
    assert v["pcie_replay_counter"] == 57
    assert v["throttle_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert v["nvlink"] == {
        "0": {"state": "up", "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": 0},
        "1": {"state": "down", "replay": 1203, "recovery": 2, "crc_flit": 88, "crc_data": 0, "ecc_data": 0},
    }
    assert v["unsupported"] == [] and v["errors"] == {}
    assert "xid_events" not in v  # not listened for


def test_unsupported_functions_are_none_and_listed_never_a_crash():
    g1 = nvml.collect_gpus("node1", FakeNvml(), sysfs_root=None)[1]
    v = g1.values
    assert g1.status == "ok"
    assert v["retired_pages_sbe"] is None and v["pcie_replay_counter"] is None
    assert v["remapped_rows_uncorrectable"] is None and v["nvlink"] is None
    assert set(v["unsupported"]) >= {"retired_pages_sbe", "pcie_replay_counter", "remapped_rows", "nvlink"}
    assert v["throttle_reasons"] == ["gpu_idle"]


def test_xid_critical_errors_are_collected_per_gpu():
    g0, g1 = nvml.collect_gpus("node1", FakeNvml(), xid_wait_s=0.5, sysfs_root=None)
    assert [e["xid"] for e in g0.values["xid_events"]] == [79]
    assert g1.values["xid_events"] is None and "xid_events" in g1.values["unsupported"]


def test_an_nvml_failure_other_than_unsupported_marks_the_gpu_error():
    fake = FakeNvml()

    def broken(*_a):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    fake.nvmlDeviceGetPcieReplayCounter = broken
    g0 = nvml.collect_gpus("node1", fake, sysfs_root=None)[0]
    assert g0.status == "error" and "pcie_replay_counter" in g0.error
    assert g0.values["ecc_volatile_corrected"] == 12  # the rest is still read


def test_pci_relation_like_nvidia_smi_topo():
    rc = "/sys/devices/pci0000:16"
    sw = f"{rc}/0000:16:00.0/0000:17:00.0"
    gpu = f"{sw}/0000:18:00.0"
    assert nvml.pci_relation(gpu, f"{sw}/0000:19:00.0") == "PIX"
    assert nvml.pci_relation(f"{sw}/0000:18:00.0/0000:1a:00.0", f"{sw}/0000:19:00.0") == "PXB"
    assert nvml.pci_relation(gpu, f"{rc}/0000:16:02.0/0000:30:00.0") == "PHB"
    assert nvml.pci_relation(gpu, "/sys/devices/pci0000:a0/0000:a0:01.0/0000:a1:00.0", 0, 0) == "NODE"
    assert nvml.pci_relation(gpu, "/sys/devices/pci0000:a0/0000:a0:01.0/0000:a1:00.0", 0, 1) == "SYS"


def test_gpu_to_nic_affinity_from_a_sysfs_tree(tmp_path):
    sw = tmp_path / "sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0"
    gpu, near, far = sw / "0000:18:00.0", sw / "0000:19:00.0", tmp_path / "sys/devices/pci0000:ca/0000:ca:01.0"
    for d in (gpu, near, far):
        d.mkdir(parents=True)
        (d / "numa_node").write_text("0\n" if "pci0000:16" in str(d) else "1\n")
    (tmp_path / "sys/bus/pci/devices").mkdir(parents=True)
    os.symlink(gpu, tmp_path / "sys/bus/pci/devices/0000:18:00.0")
    for name, dev in (("mlx5_0", near), ("mlx5_1", far)):
        (tmp_path / f"sys/class/infiniband/{name}").mkdir(parents=True)
        os.symlink(dev, tmp_path / f"sys/class/infiniband/{name}/device")
    fake = FakeNvml()
    fake.gpus[0]["busId"] = "00000000:18:00.0"
    g0 = nvml.collect_gpus("node1", fake, sysfs_root=tmp_path)[0]
    assert g0.values["nic_affinity"] == {"mlx5_0": "PIX", "mlx5_1": "SYS"}
