"""The real `dcb` on a veth inside a network namespace: a driver without DCB has no PFC to check (n/a)."""

import os
import shutil
import subprocess

import pytest
from fabricdoc.probes.host.dcb import pfc_check

pytestmark = pytest.mark.netns

NS = "fddcb-h1"


def sh(*argv):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=True)


@pytest.fixture
def veth_in_netns():
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("dcb") is None:
        pytest.skip("needs root, iproute2 and its dcb tool")
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    try:
        sh("ip", "netns", "add", NS)
        sh("ip", "-n", NS, "link", "add", "fddcb0", "type", "veth", "peer", "name", "fddcb1")
        yield NS
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def test_a_veth_has_no_dcb_so_pfc_is_not_applicable_and_a_missing_interface_is_not_seen(veth_in_netns):
    check = pfc_check("h1", "fddcb0", 1, netns=veth_in_netns)
    assert (check.status, check.subject, check.port) == ("n/a", "fddcb0", 1)
    assert "Operation not supported" in check.reason
    gone = pfc_check("h1", "fddcb9", 1, netns=veth_in_netns)
    assert gone.status == "unknown" and "No such device" in gone.reason
