"""Host configuration checks read from a sysfs/procfs tree: fail, ok and unknown (not seen)."""

from __future__ import annotations

import os
import struct

from fabricdoc.probes.host import hostconfig

from tests.helpers.paths import DATA

TREE = os.path.join(DATA, "sysfs-hostconfig", "derived_cx5_x8_numa1_no_peermem")


def _by_check(root: str) -> dict[str, object]:
    return {c.check: c for c in hostconfig.check_host(root, "h1")}


def test_x8_nic_numa_mismatch_and_no_peermem_fail_with_reasons():
    checks = _by_check(TREE)
    assert checks["pcie_link"].status == "fail" and "x8" in checks["pcie_link"].reason
    assert checks["numa"].status == "fail" and checks["numa"].values == {"numa": 1, "gpu_numa": [0]}
    assert checks["gpudirect"].status == "fail"
    assert checks["roce_gid"].status == "ok" and checks["roce_gid"].values["v2_ipv4"] == 3
    assert checks["mtu"].values == {"mtu": 9000}
    assert checks["traffic_class"].status == "n/a"  # the inbox driver exposes no tc/ files


def test_a_missing_tree_is_unknown_never_ok(tmp_path):
    checks = hostconfig.check_host(tmp_path, "h")
    assert [(c.check, c.status) for c in checks] == [("gpudirect", "unknown")]


def test_a_host_without_gpus_has_nothing_to_check_for_gpudirect_not_an_unknown(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/modules").write_text("mlx5_ib 495616 0 - Live 0x0000000000000000\n")
    (check,) = hostconfig.check_host(tmp_path, "h")
    assert (check.check, check.status, check.reason) == ("gpudirect", "n/a", "no NVIDIA GPU seen")


def test_acs_redirect_read_from_the_extended_capability():
    config = bytearray(4096)
    struct.pack_into("<I", config, 0x100, 0x000D | (1 << 16))  # ACS, version 1, last capability
    struct.pack_into("<H", config, 0x106, 0x1D)  # SrcValid ReqRedir CmpltRedir UpstreamFwd
    assert hostconfig.acs_redirect(bytes(config)) is True
    struct.pack_into("<H", config, 0x106, 0x01)
    assert hostconfig.acs_redirect(bytes(config)) is False
    assert hostconfig.acs_redirect(bytes(64)) is None  # non-root read: unknown


def test_the_netdevs_of_rdma_devices_with_an_ethernet_port_are_where_pfc_is_read():
    assert hostconfig.roce_netdevs(TREE) == ["enp177s0np0"]
