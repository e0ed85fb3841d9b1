"""NCCL's own output: one pure parser each for NCCL_DEBUG logs, ``ncclras`` reports and NCCL Inspector files."""
