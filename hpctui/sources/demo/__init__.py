"""The built-in demo source: a simulated cluster (``hpctui.sim``) served through the same Source contract."""
