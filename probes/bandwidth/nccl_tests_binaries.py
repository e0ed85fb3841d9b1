"""The nccl-tests binaries fabricdoc runs, and their argv."""

from __future__ import annotations

from pathlib import Path

# -- running the binaries -------------------------------------------------------
NCCL_TEST_BINARIES = {"sendrecv": "sendrecv_perf", "all_reduce": "all_reduce_perf", "alltoall": "alltoall_perf"}


def binary_for(given: str, test: str) -> str | None:
    """The nccl-tests binary that runs ``test``, beside ``given`` (a binary such as
    ``/opt/nccl-tests/build/sendrecv_perf``, or its directory): ``all_reduce`` ->
    ``all_reduce_perf``, ``alltoall`` -> ``alltoall_perf``; an ``_mpi`` suffix on the given
    binary is kept (``sendrecv_perf_mpi`` -> ``all_reduce_perf_mpi``). None when nccl-tests
    has no binary for ``test`` (fabricdoc's one-way ``fan:K`` probes). Whether the file
    exists is for the caller to check: this only names it.
    """
    name = NCCL_TEST_BINARIES.get(test)
    if name is None:
        return None
    path = Path(given)
    if path.is_dir():
        return str(path / name)
    suffix = "_mpi" if path.name.endswith("_perf_mpi") else ""
    return str(path.with_name(name + suffix))


def nccl_tests_argv(binary: str, size_bytes: int, iters: int = 20, warmup: int = 5) -> list[str]:
    """argv for one fixed-size nccl-tests run with the data check on (``-c 1``)."""
    return [binary, "-b", str(size_bytes), "-e", str(size_bytes), "-g", "1", "-n", str(iters), "-w", str(warmup), "-c", "1"]
