"""TEST CODE: ``python -m sglang.launch_server ARGS`` starts the launchcard sandbox's stand-in SGLang server."""

import sys

from launchcard_standin_engine.cli import sglang_launch_server_main

if __name__ == "__main__":
    sys.exit(sglang_launch_server_main())
