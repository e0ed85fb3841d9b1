"""The text summary lists probe-health warnings (identity, tool warnings inside saved outputs), escaped and
capped, so what is only in the JSON report is not missed by someone reading the terminal."""

from __future__ import annotations

from dataclasses import asdict

from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.sources.infiniband import read_ibnetdiscover_file
from tests.helpers.paths import DATA

CAPTURE = DATA / "ibnetdiscover" / "real_topograph_dgx_h100_superpod_ndr_closed" / "example.out"


def _report(probes: list[dict]) -> Report:
    fabric = {"name": "f", "hosts": 2, "switches": 1, "links": 2}
    return Report(fabric=fabric, verdict="pass", findings=[], drain=[], tests={}, probes=probes)


def _warning(target: str, error: str) -> dict:
    return {"probe": "identity", "target": target, "status": "warning", "duration_s": 0.0, "error": error}


def _section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("warnings ("))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_the_warnings_of_the_real_capture_are_in_the_text_summary_each_on_one_line():
    saved = read_ibnetdiscover_file(CAPTURE)
    probes = [asdict(p) for p in saved.probes]  # as Report.build stores them
    warned = [p for p in probes if p["status"] == "warning"]
    assert len(warned) == 4  # 72 unnamed HCAs, two hosts not wired rail by rail, b08's swapped cables
    section = _section(summary_text(_report(probes)))
    assert section[0] == f"warnings ({len(warned)}):" and len(section) == 1 + len(warned)
    swapped = next(p["error"] for p in probes if p["target"] == "b08-p1-dgx-08-c01")
    assert "its cables look swapped" in swapped
    assert f"  identity: {swapped}" in section  # the host is named once, by the message itself
    unnamed = next(p for p in probes if p["target"] == str(CAPTURE))
    assert f"  identity on {CAPTURE}: {unnamed['error']}" in section


def test_warnings_past_ten_are_counted_and_left_to_the_json_report():
    probes = [_warning(f"host{i:02d}", f"host{i:02d}: HCA-1 (rail 0) is cabled to leaf9, a rail-1 leaf")
              for i in range(13)]
    probes.append({"probe": "nccl-tests", "target": "a.log", "status": "skipped", "duration_s": 0.0, "error": "x"})
    section = _section(summary_text(_report(probes)))
    assert section[0] == "warnings (13):"
    assert section[1:11] == [f"  identity: {p['error']}" for p in probes[:10]]
    assert section[11:] == ["  (+3 more in the JSON report's probes)"]


def test_no_warnings_no_section():
    probes = [{"probe": "ibnetdiscover", "target": "t", "status": "ok", "duration_s": 0.0, "error": None}]
    assert "warnings (" not in summary_text(_report(probes))


def test_hostile_names_in_warnings_are_escaped():
    probes = [_warning("evil\x1b]0;pwned\x07", "evil\x1b]0;pwned\x07: HCA-1 on \x1b[2Jleaf\u202e\nx"),
              _warning("t\x1b[31m", "72 HCAs have no host name\r\x9b")]
    text = summary_text(_report(probes))
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
    assert "\r" not in text
    section = _section(text)
    assert len(section) == 3  # a newline in a name does not add a line
