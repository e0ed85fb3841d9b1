"""Kernel log parsing on real journal/dmesg samples: events, real timestamps, ports, one-line errors."""

from __future__ import annotations

import os

import pytest
from fabricdoc.probes.host import kmsg

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA

K = os.path.join(DATA, "kmsg")


def _read(case: str, name: str) -> tuple[str, str]:
    path = os.path.join(K, case, name)
    with open(path, encoding="utf-8") as fh:
        return fh.read(), path


def test_short_iso_link_flap_becomes_link_events_on_the_mapped_port():
    text, path = _read("derived_ovn_short_iso_flap", "journal.txt")
    events = kmsg.map_ports(kmsg.parse_kmsg(text, "node4", path), {"enp1s0f0np0": 7}, {})
    links = kmsg.link_events(events)
    assert [(e.state, e.port, e.source) for e in links] == [("down", 7, "kmsg"), ("up", 7, "kmsg")]
    assert links[1].timestamp - links[0].timestamp == 220.0  # 09:24:35Z -> 09:28:15Z


def test_dmesg_since_boot_has_no_time_without_boot_time_and_no_link_event():
    text, path = _read("real_cx6dx_dmesg_link_temp_health", "dmesg.txt")
    events = kmsg.parse_kmsg(text, "h", path)
    assert all(e.timestamp is None for e in events)
    assert kmsg.link_events(kmsg.map_ports(events, {"enp65s0f0": 1}, {})) == []
    timed = kmsg.parse_kmsg(text, "h", path, boot_time=1_700_000_000.0)
    assert timed[0].timestamp == pytest.approx(1_700_000_013.740127)


def test_mlx5_thermal_and_health_messages_name_the_pci_function():
    text, path = _read("real_cx6dx_dmesg_link_temp_health", "dmesg.txt")
    events = kmsg.parse_kmsg(text, "h", path)
    kinds = [(e.kind, e.device) for e in events if e.kind != "link"]
    assert ("thermal", "0000:41:00.1") in kinds and ("thermal", "0000:41:00.0") in kinds
    assert sum(1 for k, d in kinds if k == "health" and d == "0000:41:00.0") == 3
    downs = [(e.device, e.ifname) for e in events if e.kind == "link" and e.state == "down"]
    assert downs == [("0000:01:00.0", "enp1s0f0"), ("0000:41:00.0", "enp65s0f0")]


def test_firmware_command_timeouts_are_cmd_timeout_events():
    text, path = _read("real_ucx7738_cmd_timeout", "dmesg.txt")
    events = kmsg.parse_kmsg(text, "b1360", path)
    assert len(events) == 7 and {e.kind for e in events} == {"cmd_timeout"}


def test_aer_on_an_nvme_drive_is_an_aer_event_for_that_device_only():
    text, path = _read("real_mail_syslog_aer_nvme", "syslog.txt")
    events = kmsg.parse_kmsg(text, "begin", path)
    assert [(e.kind, e.state, e.device, e.driver) for e in events] == [("aer", "corrected", "0000:02:00.0", "nvme")]
    mapped = kmsg.map_ports(events, {"eth0": 1}, {"0000:01:00.0": ["eth0"]})
    assert mapped[0].port is None


def test_module_plugged_and_dmesg_T_and_journal_json():
    text, path = _read("real_armnas_cx5_module_plugged", "dmesg.txt")
    assert [(e.kind, e.state) for e in kmsg.parse_kmsg(text, "nas", path)] == [("module", "plugged")]
    text, path = _read("real_mail_dmesg_T_link_down", "dmesg-T.txt")
    events = kmsg.parse_kmsg(text, "h", path)
    assert [(e.kind, e.state, e.ifname) for e in events] == [("link", "down", "ens2f0np0")]
    assert events[0].timestamp is not None
    text, path = _read("real_walle_journal_json_ext4", "journal.json")
    assert kmsg.parse_kmsg(text, "vla2", path) == []


def test_a_line_in_no_log_format_names_file_and_line():
    with pytest.raises(ParseError) as err:
        kmsg.parse_kmsg("[   1.0] ok\nthis is not a log line\n", "h", "x.log")
    assert str(err.value).startswith("x.log:2:")
    with pytest.raises(ParseError, match="x.json:1"):
        kmsg.parse_kmsg('{"MESSAGE": 3}\n', "h", "x.json")
