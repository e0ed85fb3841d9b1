#!/bin/bash
# Slurm PrologSlurmctld: may this job start on its nodes, by the latest fabricdoc report?
#
#   slurm.conf:  PrologSlurmctld=/etc/slurm/fabricdoc/prolog_slurmctld.sh
#
# Runs once per job on the slurmctld host, with $SLURM_JOB_NODELIST set: the gate judges the job's
# hosts and the links and switches of its ring. Exit 0 lets the job start. Any other exit makes Slurm
# requeue the job (it waits for a later try) and drains no node: the right place to hold jobs back,
# also when the report is stale or unreadable (exit 2). Output goes to slurmctld's log.
set -u
here=$(dirname "$0")
conf=/etc/fabricdoc/slurm.env
[ -r "$here/fabricdoc-slurm.env" ] && conf="$here/fabricdoc-slurm.env"
if ! . "$conf"; then
    echo "fabricdoc prolog_slurmctld: cannot read $conf" >&2
    exit 2
fi
args=(gate "$FABRICDOC_REPORT" --quiet)
[ -n "${FABRICDOC_POLICY:-}" ] && args+=(--policy "$FABRICDOC_POLICY")
[ -n "${FABRICDOC_MAP:-}" ] && args+=(--map "$FABRICDOC_MAP")
exec "$FABRICDOC" "${args[@]}"
