"""ethtool -S: real veth output captured here, mlx5 names, and the ways reading it fails."""

from __future__ import annotations

import os

import pytest
from fabricdoc.probes.host import ethtool

from fabricdoc.errors import ProbeError
from tests.helpers.netns_lab import sh
from tests.helpers.paths import DATA

ETHTOOL = os.path.join(DATA, "ethtool")


def read(case: str) -> str:
    with open(os.path.join(ETHTOOL, case, "ethtool-S.txt")) as fh:
        return fh.read()


@pytest.mark.netns
def test_real_veth_stats_through_ioctl_and_command_agree(two_hosts):
    import json
    import sys

    _lab, a, _b = two_hosts
    by_cmd, how = ethtool.collect_ethtool("fdha0", netns=a)
    assert how == "ethtool" and "peer_ifindex" in by_cmd
    # The ioctl path reads this process's namespace: run it from inside the namespace.
    code = ("import json; from fabricdoc.probes.host import ethtool; "
            "print(json.dumps(ethtool.collect_ethtool('fdha0')))")
    by_ioctl, how = json.loads(sh("ip", "netns", "exec", a, sys.executable, "-c", code).stdout)
    assert how == "ioctl"
    assert by_ioctl == by_cmd


@pytest.mark.netns
def test_interface_without_stats_is_unsupported_not_a_crash(two_hosts):
    _lab, a, _b = two_hosts
    with pytest.raises(ProbeError) as exc:
        ethtool.collect_ethtool("lo", netns=a)
    assert exc.value.status == "unsupported"
    assert "no stats available" in str(exc.value)


@pytest.mark.netns
def test_interface_gone_mid_read_is_one_error_line(two_hosts):
    _lab, a, _b = two_hosts
    sh("ip", "-n", a, "link", "del", "fdha0")
    with pytest.raises(ProbeError) as exc:
        ethtool.collect_ethtool("fdha0", netns=a)
    assert exc.value.status == "error"
    assert "\n" not in str(exc.value) and "fdha0" in str(exc.value)
