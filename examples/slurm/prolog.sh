#!/bin/bash
# Slurm node Prolog: is THIS node fit for the job, by the latest fabricdoc report?
#
#   slurm.conf:  Prolog=/etc/slurm/fabricdoc/prolog.sh
#                PrologFlags=Alloc   (else a node's Prolog runs only when a step starts there: a
#                                     batch job's other nodes would never be checked)
#
# Runs on every node of a job before it starts, without $SLURM_JOB_NODELIST. A failing node Prolog
# makes Slurm drain that node ("Prolog error") and hold the job, so the gate judges only this node
# ($SLURMD_NODENAME) and passes when it cannot check at all (no report, a stale one): fabricdoc's own
# trouble never drains a node. Use prolog_slurmctld.sh to judge whole jobs and links. Output goes to
# slurmd's log.
set -u
here=$(dirname "$0")
conf=/etc/fabricdoc/slurm.env
[ -r "$here/fabricdoc-slurm.env" ] && conf="$here/fabricdoc-slurm.env"
if ! . "$conf"; then
    echo "fabricdoc prolog: cannot read $conf: not checking" >&2
    exit 0
fi
args=(gate "$FABRICDOC_REPORT" --quiet)
[ -n "${FABRICDOC_POLICY:-}" ] && args+=(--policy "$FABRICDOC_POLICY")
[ -n "${FABRICDOC_MAP:-}" ] && args+=(--map "$FABRICDOC_MAP")
exec "$FABRICDOC" "${args[@]}"
