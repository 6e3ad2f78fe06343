"""TEST CODE: see sglang/__init__.py (the launchcard sandbox's stand-in, not SGLang)."""
