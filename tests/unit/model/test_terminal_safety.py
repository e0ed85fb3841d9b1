"""Untrusted names (node descriptions, hostnames, fabric names) never drive the terminal:
ESC sequences, OSC-8 links, newlines and bidi overrides are shown escaped in every output."""

from __future__ import annotations

import pytest

from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import Observations
from fabricdoc.model.text import escape
from fabricdoc.report.report import Report
from tests.helpers.reports import nic_down

HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\\nINJECTED\u202eevil"
FORBIDDEN = ("\x1b", "\x07", "\u202e")


def _hostile_report(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    fabric.name = "fab" + HOSTILE
    fabric.nodes["node0001"].label = "node0001" + HOSTILE
    finding = nic_down("node0001", "F001")
    finding.name = "node0001" + HOSTILE
    report = Report.build(fabric, [finding], Observations())
    report.drain[0].reason += HOSTILE
    path = tmp_path / "hostile.json"
    report.save(path)
    return path


def _clean(text: str) -> None:
    for ch in FORBIDDEN:
        assert ch not in text
    assert not any(line.startswith("INJECTED") for line in text.splitlines())


def test_escape_makes_every_control_and_bidi_character_visible():
    shown = escape(HOSTILE)
    _clean(shown)
    assert "\\x1b[2J" in shown and "\\u202e" in shown and "\\x0a" in shown
    assert escape("gpu017 mlx5_0") == "gpu017 mlx5_0"


@pytest.mark.parametrize("argv", [
    ["schema", "--validate", "{report}"],
    ["impact", "{report}"],
    ["drain", "{report}"],
    ["gate", "{report}", "--job-nodelist", "node[0001-0004]"],
    ["k8s", "npd", "{report}", "--node", "node0001"],
    ["k8s", "taints", "{report}", "--format", "kubectl"],
])
def test_commands_reading_a_hostile_report_print_it_escaped(tmp_path, capsys, argv):
    path = _hostile_report(tmp_path)
    main([a.format(report=path) for a in argv])
    out = capsys.readouterr()
    _clean(out.out)
    _clean(out.err)


def test_the_text_summary_and_the_history_escape_hostile_names(tmp_path, capsys):
    from fabricdoc.report.render import summary_text

    path = _hostile_report(tmp_path)
    text = summary_text(Report.load(path))
    _clean(text)
    assert "\\x1b[2J" in text
    db = tmp_path / "h.sqlite"
    assert main(["history", "--history", str(db), "add", str(path)]) == 0
    for view in ("failures", "sweeps"):
        assert main(["history", "--history", str(db), view]) == 0
    _clean(capsys.readouterr().out)


def test_error_lines_escape_the_file_name_they_quote(tmp_path, capsys):
    bad = tmp_path / ("r" + "\x1b[2J" + ".json")
    bad.write_text("{not json")
    assert main(["gate", str(bad), "--job-nodelist", "n1"]) == 2
    err = capsys.readouterr().err
    _clean(err)
    assert err.count("\n") == 1
