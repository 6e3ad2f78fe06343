"""TEST CODE: the import path of the real SGLang's server parser, impersonated by the launchcard sandbox's stand-in
engine (tests/sandbox/standin_engine), so that a parse-only program run with an SGLang image's Python answers
here as it does in the real image. Not SGLang: only ``sglang.srt.server_args`` is provided, built from the pinned
release's flag table (launchcard_standin_engine/sglang_args.py)."""

from sglang.version import __version__  # noqa: F401
