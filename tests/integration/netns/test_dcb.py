"""The real `dcb` on a veth inside a network namespace: a driver without DCB has no PFC to check (n/a)."""

import shutil

import pytest
from fabricdoc.probes.host.dcb import pfc_check

pytestmark = pytest.mark.netns


def test_a_veth_has_no_dcb_so_pfc_is_not_applicable_and_a_missing_interface_is_not_seen(two_hosts):
    if shutil.which("dcb") is None:
        pytest.skip("needs iproute2's dcb tool")
    _lab, a, _b = two_hosts
    check = pfc_check("h1", "fdha0", 1, netns=a)
    assert (check.status, check.subject, check.port) == ("n/a", "fdha0", 1)
    assert "Operation not supported" in check.reason
    gone = pfc_check("h1", "fdha9", 1, netns=a)
    assert gone.status == "unknown" and "No such device" in gone.reason
