"""infiniband-diags and ibsim: a runner through the exec seam, and one pure parser per tool."""
