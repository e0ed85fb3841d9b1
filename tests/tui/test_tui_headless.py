"""The core stays headless: importing fabricdoc (and its CLI) never loads textual."""

from __future__ import annotations

import subprocess
import sys

CORE = "import fabricdoc, fabricdoc.report, fabricdoc.topology, fabricdoc.probes"


def _loads_textual(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", f"{code}; import sys; print('textual' in sys.modules)"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_importing_the_core_does_not_load_textual():
    assert _loads_textual(CORE) == "False"


def test_building_the_cli_with_the_tui_command_does_not_load_textual():
    assert _loads_textual("from fabricdoc.cli import build_parser; build_parser()") == "False"


def test_the_tui_package_does_load_textual():
    # The check above can fail: importing the app does pull textual in.
    assert _loads_textual("import fabricdoc.tui.app") == "True"


def test_tui_command_with_a_missing_report_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fabricdoc.cli", "tui", str(tmp_path / "nope.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"fabricdoc tui: error: {tmp_path / 'nope.json'}: no such report file"]
