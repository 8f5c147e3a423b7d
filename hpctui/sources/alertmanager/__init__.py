"""The site's Alertmanager (API v2): its alerts become findings on the nodes they name, its silences are listed,
and silences are created and expired through the action executor (preview, confirm, audit)."""
