"""Who runs hpctui, as the OS says (what audit records and silences name)."""

from __future__ import annotations

import os
import pwd


def os_user() -> str:
    """The name of the uid we run as, from the OS: ``$LOGNAME``/``$USER`` can be set to anything."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
