"""Health checks (DCGM diagnostics, NCCL all-reduce, NHC, a site's own) as tracked actions, and the resume gate."""
