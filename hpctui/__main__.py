"""``python -m hpctui``."""

from hpctui.cli.main import main

raise SystemExit(main())
