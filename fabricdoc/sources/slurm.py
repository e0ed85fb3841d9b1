"""Slurm as a source: what it says about its nodes now (``sinfo -R``), and running planned commands.

The scheduler package plans drains and resumes; this module is where they touch
Slurm, through the probes' exec seam.
"""

from __future__ import annotations

from fabricdoc.probes.slurm import (
    SlurmTools,
    parse_job_nodelist,
    parse_reservations,
    parse_sinfo_comments,
    parse_sinfo_nodes,
    parse_sinfo_reasons,
)

__all__ = ["SlurmTools", "parse_job_nodelist", "parse_reservations", "parse_sinfo_comments", "parse_sinfo_nodes",
           "parse_sinfo_reasons"]
