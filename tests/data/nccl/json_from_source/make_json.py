"""Write the nccl-tests ``-J`` JSON of a real text run, the way nccl-tests' ``src/util.cu`` writes it.

No real ``-J`` output was found published (see ../README.md), so this derives
one from a real text log: the keys, their order and their formats come from
NVIDIA/nccl-tests ``src/util.cu`` (JSON_FILE_VERSION 1, nccl-tests 2.17.6 to
2.17.8: ``jsonDouble`` prints ``%lf``, ``jsonBool`` the strings "true"/"false",
``root`` the ``%6i`` string, ``nwrong`` a double or null for ``N/A``, and
version 1 spells ``average_bus_bandwidith``/``bandwidith``; one ``devices``
entry per MPI process, parsed from that process's first rank line); the
figures come from the text log's table, rounded as the text printed them.
``start_time``, ``end_time`` and ``env`` are not in the text log: they are
placeholders that fabricdoc does not read.

Run from the repository root: ``python tests/data/nccl/json_from_source/make_json.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent
SRC = HERE.parent / "xxrjun_h100_n2g1_sendrecv_truncated" / "nccl_N2_G1_cnode2-002_cnode2-008.log"
OUT = HERE / "alltoall_2x1_h100_v1.json"
RANK = re.compile(r"^#  Rank\s+(\d+) Group\s+(\d+) Pid\s+(\d+) on\s+(\S+) device\s+(\d+) \[([^\]]*)\] (.*)$")


def _str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("/", "\\/") + '"'


def _dbl(text: str) -> str:
    return f"{float(text):f}"


def _half(time: str, alg: str, bus: str, wrong: str) -> str:
    nwrong = "null" if wrong == "N/A" else _dbl(wrong)
    return f'{{"time":{_dbl(time)},"alg_bw":{_dbl(alg)},"bus_bw":{_dbl(bus)},"nwrong":{nwrong}}}'


def main() -> None:
    lines = SRC.read_text().splitlines()
    run = lines[: lines.index("# Collective test concluded: alltoall_perf") + 1]
    devices, rows = [], []
    for line in run:
        if m := RANK.match(line):
            rank, group, pid, host, dev, bus, name = m.groups()
            devices.append(f'{{"rank":{rank},"group":{group},"pid":{pid},"hostname":{_str(host)},"device":{dev},'
                           f'"device_hex":{_str(bus)},"device_info":{_str(name)}}}')
        elif line[:1] == " " and line.split()[0].isdigit():
            t = line.split()
            rows.append(f'{{"size":{t[0]},"count":{t[1]},"type":{_str(t[2])},"redop":{_str(t[3])},'
                        f'"root":{_str(f"{int(t[4]):6d}")},"out_of_place":{_half(*t[5:9])},'
                        f'"in_place":{_half(*t[9:13])},"actual_iterations":20,"experiment_name":""}}')
    avg = next(ln for ln in run if ln.startswith("# Avg bus bandwidth")).split(":")[1].split()[0]
    args = ["./build/alltoall_perf", "-b", "33554432", "-e", "17179869184", "-f", "2", "-J", "alltoall.json"]
    doc = (
        '{"version":1,"start_time":"2025-11-01 00:00:00","args":[' + ",".join(map(_str, args)) + '],"env":[],'
        '"nccl_version":22807,"config":{"nthreads":1,"ngpus":1,"minimum_bytes":33554432,'
        '"maximum_bytes":17179869184,"step_factor":2,"warmup_iters":5,"iterations":20,"aggregated_iterations":1,'
        '"validation":1,"graph":0,"blocking_collectives":"false","parallel_init":"false",'
        '"devices":[' + ",".join(devices) + ']},"results":[' + ",".join(rows) + '],'
        '"out_of_bounds":{"count":0,"okay":"true"},'
        f'"average_bus_bandwidith":{{"bandwidith":{_dbl(avg)},"okay":"unchecked"}},'
        '"errors":[""],"end_time":"2025-11-01 00:00:10"}'
    )
    OUT.write_text(doc)


if __name__ == "__main__":
    main()
