"""Where observations come from: InfiniBand, RoCE hosts, nccl-tests logs, saved records, the simulator.

The only package that imports :mod:`fabricdoc.probes`.
"""
