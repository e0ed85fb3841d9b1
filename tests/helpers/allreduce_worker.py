"""One rank of an N-rank gloo AllReduce timing (test helper for the measured-vs-predicted check).

Run once per rank, e.g. inside that host's network namespace:
``python allreduce_worker.py --rank R --world N --master-addr A --master-port P``
with ``GLOO_SOCKET_IFNAME`` set to the rank's interface. Prints one JSON line
prefixed ``FDIM_ALLREDUCE `` with algbw and busbw in Gb/s (nccl-tests:
busbw = algbw x 2(n-1)/n) and whether the sums were right.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta

MARKER = "FDIM_ALLREDUCE "


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--master-addr", required=True)
    p.add_argument("--master-port", type=int, required=True)
    p.add_argument("--size-bytes", type=int, default=4 << 20)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=120.0)
    args = p.parse_args()
    os.environ["MASTER_ADDR"] = args.master_addr
    os.environ["MASTER_PORT"] = str(args.master_port)
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=args.rank, world_size=args.world, timeout=timedelta(seconds=args.timeout))
    n = args.size_bytes // 4
    base = torch.arange(n, dtype=torch.float32) % 1021
    buf = torch.empty(n, dtype=torch.float32)
    times = []
    wrong = 0
    for it in range(args.warmup + args.iters):
        buf.copy_(base * (args.rank + 1))
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(buf)
        dt = time.perf_counter() - t0
        if it >= args.warmup:
            times.append(dt)
        wrong += int((buf != base * (args.world * (args.world + 1) / 2)).sum().item())
    dist.destroy_process_group()
    mean = sum(times) / len(times)
    algbw = args.size_bytes * 8 / 1e9 / mean
    busbw = algbw * 2 * (args.world - 1) / args.world
    record = {"rank": args.rank, "world": args.world, "size_bytes": args.size_bytes, "iters": args.iters,
              "seconds": times, "algbw_gbps": algbw, "busbw_gbps": busbw, "wrong": wrong}
    sys.stdout.write(MARKER + json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
