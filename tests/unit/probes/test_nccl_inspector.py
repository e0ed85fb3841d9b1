"""NCCL Inspector files: the plugin's records (pretty-printed or one per line) become each communicator's figure."""

from __future__ import annotations

import pytest

from fabricdoc.errors import ParseError
from fabricdoc.sources.nccl_inspector import read_inspector
from tests.helpers.paths import DATA

INSPECTOR = DATA / "nccl-inspector"


def test_every_sample_reads_with_its_rank_host_and_busbw_in_gbps():
    comms = {c.comm: c for c in read_inspector([str(INSPECTOR)])}
    assert set(comms) == {"0x7f8c496ae9f661", "0xe62dedaa97644a", "0x9e7a479f95a66c", "0xad56c683b0c4ef"}
    ar = comms["0x7f8c496ae9f661"]
    assert (ar.coll, ar.n_ranks, ar.nnodes, ar.size_bytes, ar.hosts) == ("AllReduce", 8, 1, 17179869184,
                                                                          {2: "example-hostname"})
    assert ar.busbw_gbps == pytest.approx(485.119099 * 8)
    dd = comms["0xad56c683b0c4ef"]
    assert dd.hosts == {1: "nanogpt-nccl-test-worker-0"} and dd.missing_ranks == [0, 2]


def test_the_median_of_the_largest_messages_is_kept(tmp_path):
    rec = ('{{"header":{{"id":"0x1","rank":{r},"n_ranks":2,"nnodes":2}},"metadata":{{"hostname":"h{r}","pid":1}},'
           '"coll_perf":{{"coll":"AllReduce","coll_sn":{sn},"coll_msg_size_bytes":{size},"coll_exec_time_us":9,'
           '"coll_algobw_gbs":1.0,"coll_busbw_gbs":{bw}}}}}')
    lines = [rec.format(r=r, sn=sn, size=size, bw=bw) for r, sn, size, bw in
             ((0, 1, 1024, 1.0), (0, 2, 1 << 30, 40.0), (1, 2, 1 << 30, 44.0), (1, 3, 1 << 30, 10.0))]
    (tmp_path / "h0-pid1.log").write_text("\n".join(lines) + "\n")
    (cp,) = read_inspector([str(tmp_path)])
    assert (cp.size_bytes, cp.ops, cp.busbw_gbps, cp.hosts) == (1 << 30, 3, 320.0, {0: "h0", 1: "h1"})


@pytest.mark.parametrize("text, where", [
    ('{"header": {"id": "0x1", "rank": 0, "n_ranks": 1}}\n', "f.log:1"),
    ('{"header":{"id":"0x1","rank":0,"n_ranks":1},"coll_perf":{"coll":"AllReduce","coll_msg_size_bytes":1,'
     '"coll_busbw_gbs":"fast"}}\n', "f.log:1"),
    ('{"header":{"id":"0x1","rank":3,"n_ranks":2},"coll_perf":{}}\n', "f.log:1"),
    ('\n\n{"header": \n', "f.log:4"),  # the value is missing at the end, line 4
])
def test_a_record_it_cannot_read_names_file_and_line(tmp_path, text, where):
    path = tmp_path / "f.log"
    path.write_text(text)
    with pytest.raises(ParseError) as exc:
        read_inspector([str(path)])
    assert where in str(exc.value)


def test_a_directory_without_inspector_files_is_an_error(tmp_path):
    with pytest.raises(ParseError, match="no NCCL Inspector files"):
        read_inspector([str(tmp_path)])
