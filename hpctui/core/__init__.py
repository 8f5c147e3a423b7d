"""The running program without its screens: configuration, the store, the pollers and the runtime that wires
sources, the action executor and the findings together. UI-free (no Textual)."""
