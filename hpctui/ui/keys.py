"""The key tables by group, for the widgets and screens that bind them: a view of
:mod:`hpctui.ui.registry`, which holds them (and the ``:`` commands) and derives the
footer, help, palette and key reference from the same entries."""

from __future__ import annotations

from hpctui.ui.registry import (
    ACTION_KEYS,
    ALL_KEYS,
    CUSTOM_SCOPE_PANES,
    GLOBAL_KEYS,
    HEATMAP_KEYS,
    HEATMAP_VIEW_KEYS,
    JOB_ACTION_KEYS,
    JOB_LOG_KEYS,
    JOB_SHELL_KEYS,
    LAYOUT_KEYS,
    LINKS_KEYS,
    LOG_VIEW_KEYS,
    MIG_KEYS,
    MOVE_KEYS,
    NODE_ACTION_KEYS,
    NODE_JOB_ACTION_KEYS,
    NODE_LOG_KEYS,
    NODE_SHELL_KEYS,
    POD_KEYS,
    POD_SHELL_KEYS,
    QUEUE_KEYS,
    SCOPE_TITLES,
    STACK_KEYS,
    TABLE_KEYS,
    TRIAGE_KEYS,
    ActionSpec,
    CustomKeyError,
    KeySpec,
    app_bindings,
    bindings,
    custom_key_specs,
    display_key,
    move_bindings,
)

__all__ = [
    "ACTION_KEYS", "ALL_KEYS", "CUSTOM_SCOPE_PANES", "GLOBAL_KEYS", "HEATMAP_KEYS", "HEATMAP_VIEW_KEYS",
    "JOB_ACTION_KEYS", "JOB_LOG_KEYS", "JOB_SHELL_KEYS", "LAYOUT_KEYS", "LINKS_KEYS", "LOG_VIEW_KEYS", "MIG_KEYS",
    "MOVE_KEYS", "NODE_ACTION_KEYS", "NODE_JOB_ACTION_KEYS", "NODE_LOG_KEYS", "NODE_SHELL_KEYS", "POD_KEYS",
    "POD_SHELL_KEYS", "QUEUE_KEYS", "SCOPE_TITLES", "STACK_KEYS", "TABLE_KEYS", "TRIAGE_KEYS", "ActionSpec",
    "CustomKeyError", "KeySpec", "app_bindings", "bindings", "custom_key_specs", "display_key", "move_bindings",
]
