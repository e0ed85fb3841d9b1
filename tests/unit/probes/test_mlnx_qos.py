"""QoS trust state and DSCP map from real mlnx_qos outputs; without MLNX_OFED there is nothing to check."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import mlnx_qos

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA

QOS = DATA / "mlnx_qos"


@pytest.mark.parametrize("case, trust, dscp_map, pfc", [
    ("real_ofed23.10_trust_dscp_pfc5", "dscp", "default", [5]),  # prio 5 and 6 listed in another order: same map
    ("real_centos_trust_pcp_defaults", "pcp", None, []),
    ("real_centos_trust_dscp_default_map", "dscp", "default", []),
    ("real_att_netarbiter_pfc3_old_format", "dscp", "default", [3]),
])
def test_the_trust_state_map_and_lossless_priorities_are_read(case, trust, dscp_map, pfc):
    parsed = mlnx_qos.parse_mlnx_qos((QOS / case / "mlnx_qos.txt").read_text())
    assert parsed["trust"] == trust and parsed["pfc_prios"] == pfc
    shown = mlnx_qos.dscp_map_text(parsed["dscp2prio"]) if parsed["dscp2prio"] else None
    assert shown == dscp_map


def test_a_dscp_moved_to_another_priority_is_named():
    mapping = {d: d >> 3 for d in range(64)}
    mapping[46] = 3
    assert mlnx_qos.dscp_map_text(mapping) == "46>3"
    del mapping[0]
    assert mlnx_qos.dscp_map_text(mapping) == "46>3 (1 unmapped)"


def test_output_without_a_trust_state_is_a_parse_error():
    with pytest.raises(ParseError, match="no 'Priority trust state'"):
        mlnx_qos.parse_mlnx_qos("DCBX mode: OS controlled\n", "x")


def test_without_mlnx_qos_there_is_no_trust_state_to_check(monkeypatch):
    monkeypatch.setattr(mlnx_qos.shutil, "which", lambda name: None)
    check = mlnx_qos.qos_check("h", "ens6", 1)
    assert (check.check, check.status, check.port) == ("qos_trust", "n/a", 1) and "MLNX_OFED" in check.reason
