"""The Textual UI. Everything below ``hpctui.ui`` may import Textual; nothing else does."""
