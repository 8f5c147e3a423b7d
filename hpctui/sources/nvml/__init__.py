"""Local GPUs through NVML (``kind = "nvml"``): for hpctui running on a GPU host."""
