"""One rank of a two-rank bandwidth test with torch.distributed (gloo on CPU, nccl on GPUs).

Run as ``python -m fabricdoc.probes.bwtest --rank R ...`` once per rank; the
launcher (:mod:`fabricdoc.probes.launch`) starts both ranks and kills them at
its timeout. Every rank prints one JSON line prefixed ``FABRICDOC_BW `` with
what it measured.

``sendrecv`` is one-way: rank 0 sends ``size`` bytes, rank 1 receives,
checks the known pattern and answers with a one-element ack, so rank 0's
clock covers delivery, not just a socket-buffer copy. ``all_reduce`` sums
``(rank + 1) * pattern`` over ``--world`` ranks and checks for
``n(n+1)/2 * pattern``. ``alltoall`` (a group test: every rank sends a
``size / n`` chunk to every other at once, ``all_to_all_single``) tags each
chunk with its sender and checks them all; ``fan`` is the same with only the
first ``--senders`` ranks sending (one way, to every other rank). Bandwidths are Gb/s (1e9 bits per
second), busbw as nccl-tests: all_reduce algbw * 2(n-1)/n, alltoall
algbw * (n-1)/n, sendrecv algbw.

torch is imported inside :func:`main`, so this module imports without it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta
from typing import Any

MARKER = "FABRICDOC_BW "


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m fabricdoc.probes.bwtest", description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, help="this rank (0 sends); default: from OMPI_COMM_WORLD_RANK or SLURM_PROCID")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--master-addr", help="rank 0's address (default: MASTER_ADDR)")
    p.add_argument("--master-port", type=int, help="rendezvous port (default: MASTER_PORT)")
    p.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    p.add_argument("--test", choices=["sendrecv", "all_reduce", "alltoall", "fan"], default="sendrecv")
    p.add_argument("--senders", type=int, default=1, help="fan: the first K ranks send, the others receive")
    p.add_argument("--size-bytes", type=int, default=4 << 20)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--timeout", type=float, default=60.0, help="torch.distributed timeout, seconds")
    p.add_argument("--device", type=int, default=0, help="CUDA device index for nccl")
    p.add_argument(
        "--inject-wrong",
        type=int,
        default=0,
        help="test hook: overwrite this many received elements before the check "
        "(a stand-in for a NIC that corrupts data; kernel TCP never delivers corrupted bytes)",
    )
    return p.parse_args(argv)


def _rank(args: argparse.Namespace) -> int:
    if args.rank is not None:
        return args.rank
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"):
        if var in os.environ:
            return int(os.environ[var])
    raise SystemExit("bwtest: no --rank and no rank in the environment")


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(MARKER + json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    rank = _rank(args)
    if args.master_addr:
        os.environ["MASTER_ADDR"] = args.master_addr
    if args.master_port:
        os.environ["MASTER_PORT"] = str(args.master_port)
    base: dict[str, Any] = {"rank": rank, "test": args.test, "backend": args.backend, "size_bytes": args.size_bytes}
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        _emit({**base, "status": "error", "error": f"torch not importable: {exc}"})
        return 3
    try:
        return _run(args, rank, base, torch, dist)
    except Exception as exc:  # reported as a record; the launcher turns it into status=error
        _emit({**base, "status": "error", "error": f"{type(exc).__name__}: {exc}"})
        return 4


def _run(args: argparse.Namespace, rank: int, base: dict[str, Any], torch: Any, dist: Any) -> int:
    if args.backend == "nccl":
        device = torch.device("cuda", args.device)
        torch.cuda.set_device(device)

        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")

        def sync() -> None:
            return None

    dist.init_process_group(
        backend=args.backend, rank=rank, world_size=args.world, timeout=timedelta(seconds=args.timeout)
    )
    world = args.world
    n = max(1, args.size_bytes // 4)
    if args.test in ("alltoall", "fan"):
        n = max(world, n - n % world)  # whole chunks, one per rank
    pattern = (torch.arange(n, dtype=torch.int32, device=device) % 1021) + 1
    chunk = n // world
    sender = torch.arange(world, dtype=torch.int32, device=device).repeat_interleave(chunk) * 4099
    k = args.senders
    # fan: a sender sends a chunk to every receiver (zero to other senders); a receiver gets one from each sender
    send_splits = [chunk if rank < k and j >= k else 0 for j in range(world)]
    recv_splits = [chunk if rank >= k and i < k else 0 for i in range(world)]
    fan_out = torch.empty(sum(recv_splits), dtype=torch.int32, device=device)
    buf = torch.empty(n, dtype=torch.int32, device=device)
    ack = torch.zeros(1, dtype=torch.int32, device=device)
    wrong = 0
    elapsed = 0.0
    dist.barrier()
    for it in range(args.warmup + args.iters):
        expect = pattern + (it % 7)
        sync()
        t0 = time.perf_counter()
        if args.test == "sendrecv":
            if rank == 0:
                dist.send(expect, dst=1)
                dist.recv(ack, src=1)
            else:
                dist.recv(buf, src=0)
                dist.send(ack, dst=0)
        elif args.test == "alltoall":
            dist.all_to_all_single(buf, expect + rank * 4099)  # chunk j goes to rank j, tagged with its sender
        elif args.test == "fan":
            outgoing = (expect + rank * 4099)[k * chunk:] if rank < k else expect[:0]
            dist.all_to_all_single(fan_out, outgoing, output_split_sizes=recv_splits, input_split_sizes=send_splits)
        else:
            buf.copy_(expect * (rank + 1))
            dist.all_reduce(buf)
        sync()
        dt = time.perf_counter() - t0
        if it >= args.warmup:
            elapsed += dt
        if args.test == "fan":
            if rank >= k:  # chunk i came from sender i: this rank's slice of its buffer, tagged
                want = expect[rank * chunk:(rank + 1) * chunk].repeat(k) + sender[: k * chunk]
                wrong += int((fan_out != want).sum().item())
        elif args.test != "sendrecv" or rank == 1:
            if args.test == "all_reduce":
                want = expect * (world * (world + 1) // 2)
            elif args.test == "alltoall":  # chunk i came from rank i: this rank's slice of its buffer, tagged
                want = expect[rank * chunk:(rank + 1) * chunk].repeat(world) + sender
            else:
                want = expect
            if args.inject_wrong and it == args.warmup:
                buf[: args.inject_wrong] = -1
            wrong += int((buf != want).sum().item())
    dist.barrier()
    dist.destroy_process_group()
    moved = (4 * n if args.test in ("alltoall", "fan") else args.size_bytes) * args.iters
    algbw = (moved * 8 / 1e9 / elapsed) if elapsed > 0 else None
    # fan: each sender's egress, (world - k) chunks per iteration
    factor = {"all_reduce": 2 * (world - 1) / world, "alltoall": (world - 1) / world,
              "fan": (world - k) / world}.get(args.test, 1.0)
    busbw = None if algbw is None else algbw * factor
    _emit(
        {
            **base,
            "status": "ok",
            "iters": args.iters,
            "seconds": elapsed,
            "algbw_gbps": algbw,
            "busbw_gbps": busbw,
            "wrong": wrong,
            "checked": rank >= k if args.test == "fan" else (args.test != "sendrecv" or rank == 1),
        }
    )
    return 0


if __name__ == "__main__":
    code = main()
    # The record is written and the process group destroyed: skip the interpreter's teardown of torch
    # (about 0.4 s a rank, more when a round's ranks exit at once on few cores).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
