"""A tiny real checkpoint for the sandbox hub: a Llama-shaped model and its tokenizer (TEST CODE).

Run at sandbox build time with the Python of the real vLLM environment (tests/sandbox/sandbox_fleet/realvllm.py),
whose transformers, tokenizers, torch and safetensors make it; nothing here is imported by the hub itself:

    python tinymodel.py OUT_DIR --max-position-embeddings 512 --seed 0

It writes what ``save_pretrained`` writes (``config.json``, ``generation_config.json``, ``model.safetensors``,
``tokenizer.json``, ``tokenizer_config.json``): a byte-level BPE tokenizer trained on a few sentences and a 2-layer
Llama of hidden size 256 with random weights (about 1.5 M parameters, a few MB), the same bytes for the same
arguments. vLLM serves it as it serves any Llama checkpoint (measured: /work/shared/docs/real-engines.md).
"""

import argparse
import os
import sys

TEXT = [
    "The sandbox fleet boots real Debian hosts on one machine.",
    "Launch cards name the engines, the images and the argv of every recipe.",
    "vLLM loads the staged snapshot offline and answers completions with real tokens.",
    "Prefill and decode meet behind the router; the hub serves the weights.",
    "Hello, world! 0123456789 hosts, units, ports, peers and revisions.",
]
VOCAB_SIZE = 512  # the trainer stops where the sentences run out of merges (about 440 tokens)


def build(out: str, max_position_embeddings: int, seed: int) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=["<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TEXT * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   model_max_length=max_position_embeddings)
    config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=256, intermediate_size=512,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=max_position_embeddings, bos_token_id=0, eos_token_id=1,
                         tie_word_embeddings=False, torch_dtype="float32")
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    fast.save_pretrained(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--max-position-embeddings", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    build(args.out, args.max_position_embeddings, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
