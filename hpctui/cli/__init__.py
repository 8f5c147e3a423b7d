"""Front ends: the ``hpctui`` command and its sub-commands (``act``, ``report``, ``serve``, ``snapshot``).

The top layer: it may import every other layer; nothing imports it.
"""
