"""Action dialogs: preview → reason → confirm → per-target results."""

from hpctui.ui.actions.dialog import ActionDialog

__all__ = ["ActionDialog"]
