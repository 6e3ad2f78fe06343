"""TEST CODE: ``python -m launchcard_standin_engine {vllm|sglang} ARGS...``."""

import sys

from launchcard_standin_engine.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
