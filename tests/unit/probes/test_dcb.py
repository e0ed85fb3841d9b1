"""PFC read with iproute2's dcb: real outputs parsed; a NIC without DCB has nothing to check."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import dcb

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA

DCB = DATA / "dcb"


@pytest.mark.parametrize("path, cap, prios", [
    ("real_hns3_kernel_commit_pfc_show/before.txt", 4, []),
    ("real_hns3_kernel_commit_pfc_show/after.txt", 4, [0, 1, 2, 3, 4, 5, 6, 7]),
    ("doc_iproute2_manpage_pfc_show/pfc_show.txt", 8, [6, 7]),
])
def test_the_lossless_priorities_are_read_from_real_output(path, cap, prios):
    assert dcb.parse_dcb_pfc((DCB / path).read_text()) == {"pfc_cap": cap, "pfc_prios": prios}


def test_a_line_it_does_not_know_is_a_parse_error_with_its_line():
    with pytest.raises(ParseError) as exc:
        dcb.parse_dcb_pfc("pfc-cap 8 macsec-bypass off delay 0\nprio-pfc 0:maybe\n", "x")
    assert str(exc.value).startswith("x:2")


def test_without_the_dcb_command_pfc_is_not_seen_never_ok(monkeypatch):
    monkeypatch.setattr(dcb.shutil, "which", lambda name: None)
    check = dcb.pfc_check("h", "eth0", 1)
    assert (check.check, check.status, check.port) == ("pfc", "unknown", 1) and "not installed" in check.reason
