"""TEST CODE: find the model's files at start-up the way vLLM and SGLang do, so a unit that would not find them
fails here as it fails there.

- A model argument that exists on disk is opened as a directory (vLLM
  ``vllm/transformers_utils/repo_utils.py`` ``get_model_path``: ``os.path.exists`` first; SGLang
  ``sglang/srt/arg_groups/model_path_hook.py``: the same test).
- Otherwise it is a Hub repo id. Offline (``HF_HUB_OFFLINE``), vLLM replaces it by
  ``snapshot_download(repo, revision=--revision, local_files_only=True)`` before anything else starts
  (``vllm/engine/arg_utils.py`` ``__post_init__``, and ``--tokenizer`` with ``--tokenizer-revision``); SGLang loads
  it through ``snapshot_download(..., revision=--revision, local_files_only=HF_HUB_OFFLINE)``
  (``sglang/srt/model_loader/weight_utils.py``) before its HTTP server opens. Without a revision both look up
  ``main``, which a cache filled by commit hash does not have: ``LocalEntryNotFoundError``, and the engine exits.
- Online, the real engines would download what the cache lacks; the stand-in loads nothing, so it uses the
  cache when it holds the revision and otherwise goes on without a snapshot.

``huggingface_hub`` reads ``HF_HOME`` and ``HF_HUB_OFFLINE`` from the environment when it is imported, as in
the engines: it is imported only when a repo id is resolved.
"""

import os
from typing import Optional

_TRUE = ("1", "ON", "YES", "TRUE")


def _repo_cache(repo: str) -> str:
    """The cache folder of a model repo (huggingface_hub ``constants``: ``HF_HUB_CACHE``, else ``HF_HOME/hub``,
    else ``~/.cache/huggingface/hub``; ``file_download.repo_folder_name``: ``models--owner--name``)."""
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                                                  "huggingface"), "hub")
    return os.path.join(os.path.expanduser(cache), "models--" + repo.replace("/", "--"))


class ModelNotFound(Exception):
    """The engine would exit: its model is neither a directory nor in the offline cache."""


def offline(env=None) -> bool:
    """Whether ``HF_HUB_OFFLINE`` is on (huggingface_hub ``constants._is_true``: 1, ON, YES, TRUE)."""
    return str((os.environ if env is None else env).get("HF_HUB_OFFLINE", "")).upper() in _TRUE


def resolve(model: str, revision: Optional[str]) -> Optional[str]:
    """The directory the engine loads ``model`` from, or None (online, not cached: the real engine downloads).

    :raises ModelNotFound: offline, and the cache holds no snapshot for ``revision`` (``main`` when None),
        with huggingface_hub's own error as the message.
    """
    if os.path.exists(model):
        return model
    if not offline() and not os.path.isdir(_repo_cache(model)):
        return None  # online, nothing cached: the real engine downloads it (skips importing huggingface_hub)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(model, revision=revision, local_files_only=True)
    except LocalEntryNotFoundError as exc:
        if offline():
            raise ModelNotFound("%s: %s" % (type(exc).__name__, exc))
        return None
    except ValueError as exc:  # huggingface_hub's HFValidationError: not a repo id (and no such directory)
        if offline():
            raise ModelNotFound("%s: %s" % (type(exc).__name__, exc))
        return None
