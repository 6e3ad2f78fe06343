"""TEST CODE: stand-in vLLM / SGLang servers for the launchcard sandbox.

Nothing here runs a model. The package installs console scripts named
``vllm`` and ``sglang`` that accept the real engines' command lines, listen
where the real ones would, and answer their HTTP APIs with canned,
OpenAI-shaped JSON whose text names the server that produced it. SGLang
prefill/decode disaggregation is simulated closely enough that a request
routed by the real ``sglang-router`` provably passes through both servers.

Standard library only, so it installs offline from a wheelhouse.
"""

__version__ = "0.1.0"
STANDIN_VERSION = "0.0.0+launchcard.standin"
