"""``python -m hpctui``."""

from hpctui.cli import main

raise SystemExit(main())
