"""Screens: the dashboard and the help overlay."""
