"""Widgets draw what they are given and post intents up; none of them polls or acts."""
