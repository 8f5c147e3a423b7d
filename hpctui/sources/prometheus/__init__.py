"""Prometheus source: dcgm-exporter and node_exporter metrics for thousands of nodes,
a few batched queries per refresh whatever the node count."""
