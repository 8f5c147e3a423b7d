"""Incident reports built from the store and the audit log (Markdown, JSON, HTML with SVG charts). UI-free."""
