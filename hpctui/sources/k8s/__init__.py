"""Kubernetes source: list + watch of nodes, pods and Warning events; cordon, drain, MIG labels."""
