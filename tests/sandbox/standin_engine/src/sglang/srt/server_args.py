"""TEST CODE: ``sglang.srt.server_args`` as the launchcard sandbox's stand-in provides it (not SGLang).

``ServerArgs.add_cli_args(parser)`` adds the pinned release's options from its generated flag table, so
``argparse`` accepts and refuses an argv here as it does with the real module; ``prepare_server_args`` parses
as the real one does (prog ``sglang serve``) and returns the namespace.
"""

from typing import List

from launchcard_standin_engine import sglang_args


class ServerArgs:
    @staticmethod
    def add_cli_args(parser) -> None:
        sglang_args.add_cli_args(parser)


def prepare_server_args(argv: List[str]):
    return sglang_args.parse(list(argv))
