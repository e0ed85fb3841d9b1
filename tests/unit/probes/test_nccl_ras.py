"""ncclras reports (text, JSON, monitor mode) read from real captures: who NCCL says is lost or out of step."""

from __future__ import annotations

import pytest
from fabricdoc.probes.nccl.ras import parse_ncclras

from fabricdoc.errors import ParseError
from fabricdoc.sources.nccl_ras import read_ncclras
from tests.helpers.paths import DATA

RAS = DATA / "nccl-ras"


def _one(case: str):
    (path,) = [p for p in (RAS / case).iterdir() if p.name != "README.md"]
    return read_ncclras(str(path))


def _said(rep):
    return [(s.state, s.rank, s.host, s.pid, s.gpu) for s in rep.signals]


def test_healthy_reports_text_and_json_say_nothing_about_any_rank():
    for case in ("real_nccl_issue1730_healthy_256gpu_2.26.2", "real_ray_healthy_2rank_2.28.9_json"):
        rep = _one(case)
        assert rep.signals == [] and rep.notes == [] and rep.version in ("2.26.2", "2.28.9")


def test_the_two_ranks_ahead_in_allgather_are_named_with_their_host_and_the_majority():
    rep = _one("real_nccl_issue1911_mismatch_allgather_2.26.2")
    assert _said(rep) == [("out_of_step", 12, "10.137.190.124", 323032, "4"),
                          ("out_of_step", 13, "10.137.190.124", 323033, "5")]
    assert rep.signals[0].detail == "launched AllGather up to operation 641 while 30 ranks reached 640"
    assert rep.signals[0].comm == "fa93daea854b060b" and rep.signals[0].line.startswith("Rank 12 -- GPU 4")


def test_a_straggler_printed_on_one_line_is_behind():
    (s,) = _one("real_nccl_example08_straggler_2.30.7").signals
    assert (s.state, s.rank, s.host) == ("out_of_step", 7, "node1")
    assert s.detail == "launched AllReduce up to operation 60 while 7 ranks reached 64"


def test_a_lost_process_is_missing_then_dead_with_its_host():
    assert {(s.state, s.host, s.pid) for s in _one("real_nccl_example08_incomplete_2.30.7").signals} == \
        {("missing", "node1", 3748990)}
    assert _said(_one("real_nccl_example08_dead_nocomm_2.30.7")) == [("dead", None, "node1", 3748990, "3")]


def test_json_counts_out_of_step_from_the_collective_counts():
    rep = _one("real_ray_a10g_mismatch_2.28.9_json")
    assert _said(rep) == [("out_of_step", 1, "10.0.109.86", 6247, "0")]
    assert rep.signals[0].detail == "launched AllReduce up to operation 100 while 3 ranks reached 101"


def test_the_missing_comma_of_nccl_2_28_9_is_repaired_and_said():
    rep = _one("real_ray_dead_rank_2.28.9_invalid_json")
    assert _said(rep) == [("missing", 1, "10.0.77.184", 10017, "1")]
    assert "(did not answer)" in rep.signals[0].detail
    assert len(rep.notes) == 1 and "2.28.7/2.28.9" in rep.notes[0]


def test_old_wording_gives_the_missing_rank_without_a_host_and_counts_timeouts():
    rep = _one("doc_nccl_ras_incomplete_timeout_2.24")
    assert _said(rep) == [("missing", None, "172.16.64.213", 3487984, "5"), ("missing", 21, None, None, None)]
    assert rep.timeouts == 2


def test_status_mismatch_names_each_minority_rank_with_its_status():
    rep = _one("doc_nccl_ras_status_mismatch")
    got = {(s.rank, s.detail.split(" while")[0]) for s in rep.signals}
    assert got == {(0, "status RUNNING"), (8, "status RUNNING"), (16, "status RUNNING"), (24, "status RUNNING"),
                   (4, "status FINALIZE"), (20, "status FINALIZE")}


def test_monitor_mode_events_text_and_json_give_the_dead_peer():
    for case in ("doc_nccl_ras_monitor_text", "doc_nccl_ras_monitor_json"):
        (s,) = _one(case).signals
        assert (s.state, s.host, s.pid, s.gpu) == ("dead", "172.16.64.245", 1524345, "1")
        assert s.detail == "PEER_DEAD at 2025-12-19 13:07:07"


def test_lines_it_does_not_understand_are_noted_never_dropped_silently():
    text = (RAS / "real_nccl_example08_straggler_2.30.7" / "ncclras.txt").read_text()
    rep = parse_ncclras(text.replace("Warnings\n========\n", "Warnings\n========\n\nSOMETHING NEW\n  odd line\n"), "x.txt")
    assert any("SOMETHING NEW" in n for n in rep.notes) and any("odd line" in n for n in rep.notes)
    assert len(rep.signals) == 1


@pytest.mark.parametrize("text, where", [
    ("hello world\n", "x:1"),
    ('{"communicators": [1}\n', "x:1"),
    ('{"nccl_version": "2.29"}', "x:1"),
    ('{"event": "PEER_DEAD"}\n{oops', "x:2"),
    ('{"event": "PEER_DEAD"}\n\n{"event": \n', "x:4"),  # the value is missing at the end, line 4
])
def test_anything_else_is_a_parse_error_naming_file_and_line(text, where):
    with pytest.raises(ParseError) as exc:
        parse_ncclras(text, "x")
    assert str(exc.value).startswith(where)
