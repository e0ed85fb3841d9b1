"""Bandwidth tests: launchers (local, netns, srun, mpirun), the torch rank program, nccl-tests output."""
