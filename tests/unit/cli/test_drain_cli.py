"""``fabricdoc drain --help`` states every exit code drain returns, the stale-report case included."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from fabricdoc.cli.main import main
from tests.helpers.reports import make_report


def _exit_codes(help_text: str) -> dict[str, str]:
    section = help_text.split("exit codes:", 1)[1]
    codes: dict[str, str] = {}
    code = None
    for line in section.splitlines():
        m = re.match(r"\s{2}(\d+)\s+(.*)", line)
        if m:
            code = m.group(1)
            codes[code] = m.group(2)
        elif code and line.strip():
            codes[code] += " " + line.strip()
    return codes


def test_the_help_states_every_exit_code_with_the_stale_report_case(capsys):
    with pytest.raises(SystemExit):
        main(["drain", "--help"])
    codes = _exit_codes(capsys.readouterr().out)
    assert set(codes) == {"0", "1", "2", "130"}
    assert "stale" in codes["2"] and "--max-report-age-h" in codes["2"] and "future" in codes["2"]


@pytest.mark.parametrize("age_h", [24 * 31, -24 * 30 * 7])  # a month old; dated seven months ahead
def test_a_stale_report_is_refused_with_the_code_the_help_gives(tmp_path, capsys, age_h):
    rep = make_report(bad_hosts=["node0001"])
    rep.generated_at = (datetime.now(UTC) - timedelta(hours=age_h)).isoformat()
    path = rep.save(tmp_path / "r.json")
    assert main(["drain", str(path), "--max-report-age-h", "24"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "nothing drained" in err
