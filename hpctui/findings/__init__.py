"""Health rules and the findings they produce: pure functions of a snapshot (and thresholds), computed once per
snapshot and read by the heatmap, the problem list, the panes, reports and ``snapshot``. Imports only the model."""
