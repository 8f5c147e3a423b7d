"""The Loki source: LogQL range queries over HTTP (``/loki/api/v1/query_range``) for the log viewer and reports."""
