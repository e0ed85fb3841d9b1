"""``--history`` defaults to $FABRICDOC_HISTORY: drains are confirmed across sweeps without the flag."""

from __future__ import annotations

import json

from fabricdoc.report.history import History
from tests.helpers.cli import run_fabricdoc


def _sweep(tmp_path, n: int, env: dict[str, str]) -> dict:
    policy = tmp_path / "policy.toml"
    policy.write_text("confirm_sweeps = 2\nconfirm_window = 2\nmax_drain = 100\n")
    out = tmp_path / f"r{n}.json"
    r = run_fabricdoc("sweep", "--fabric", "demo", "--no-progress", "--drain-policy", str(policy), "-o", str(out),
                      env=env)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(out.read_text())


def test_the_history_store_comes_from_the_environment_and_confirms_drains(tmp_path):
    db = tmp_path / "env-history.sqlite"
    env = {"FABRICDOC_HISTORY": str(db)}
    first = _sweep(tmp_path, 1, env)
    held = [h["why"] for h in first["drain_held"]]
    assert held and not first["drain"]
    assert all("1 of the last 2 sweeps" in why and "no history store given" not in why for why in held)
    with History(db, create=False) as store:
        assert len(store.sweeps()) == 1
    second = _sweep(tmp_path, 2, env)
    assert {d["node"] for d in second["drain"]} == {h["node"] for h in first["drain_held"]}


def test_without_the_variable_or_the_flag_no_history_is_kept(tmp_path):
    report = _sweep(tmp_path, 1, {"FABRICDOC_HISTORY": ""})
    assert report["drain_held"]
    assert all("no history store given" in h["why"] for h in report["drain_held"])


def test_help_says_what_happens_when_neither_is_given():
    r = run_fabricdoc("sweep", "--help", env={"COLUMNS": "400"})
    assert "$FABRICDOC_HISTORY" in r.stdout and "With neither" in r.stdout
