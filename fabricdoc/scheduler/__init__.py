"""Acting on a report: host lists and names, Slurm drain/resume, the job gate, Kubernetes, Prometheus."""
