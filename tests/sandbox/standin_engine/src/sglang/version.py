"""TEST CODE: the version of the SGLang release whose flag table the stand-in carries."""

from launchcard_standin_engine.sglang_args import load_table

__version__ = load_table()["version"]
