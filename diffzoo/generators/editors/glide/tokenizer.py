"""GLIDE's text tokenizer: GPT-2 byte-level BPE over lower-cased text.

Upstream (``glide_text2im/tokenizer/bpe.py``) is openai/gpt-2's ``encoder.py``
reading ``encoder.json.gz`` (50257 entries, ``<|endoftext|>`` last) and
``vocab.bpe.gz``; it lower-cases the prompt, adds no start/end tokens,
truncates to ``text_ctx`` and pads with the last id (the end token), with a
mask that is False on padding.  (``bpe_simple_vocab_16e6`` in the same folder
belongs to the noised CLIP model, not to the GLIDE text transformer.)

The BPE itself runs in HF ``tokenizers`` (the engine of ``GPT2TokenizerFast``)
built from those two files; the tiny card uses a 257-entry byte-level
vocabulary built the same way.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from diffzoo.generators.tiny.components import byte_chars
from diffzoo.harness.core.errors import ModelError

END_TEXT = "<|endoftext|>"


class GlideTokenizer:
    """``encode(prompt) -> ids`` and ``padded(ids, ctx) -> (ids, mask)`` as GLIDE expects."""

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]]):
        from tokenizers import Tokenizer, models, pre_tokenizers

        if sorted(vocab.values()) != list(range(len(vocab))) or vocab.get(END_TEXT) != len(vocab) - 1:
            raise ModelError(f"GLIDE BPE vocabulary must number ids 0..n-1 with {END_TEXT} last")
        self._bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        self._bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2 regex split
        self.n_vocab = len(vocab)
        self.end_token = self.n_vocab - 1

    @classmethod
    def from_files(cls, encoder_json_gz: Path, vocab_bpe_gz: Path) -> GlideTokenizer:
        """The official ``encoder.json.gz`` + ``vocab.bpe.gz`` (first merges line is a version header)."""
        try:
            with gzip.open(encoder_json_gz, "rt", encoding="utf-8") as f:
                vocab = json.load(f)
            with gzip.open(vocab_bpe_gz, "rt", encoding="utf-8") as f:
                lines = f.read().split("\n")[1:-1]
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot read GLIDE tokenizer files {encoder_json_gz}, {vocab_bpe_gz}: {exc}") from exc
        merges = [tuple(line.split()) for line in lines]
        return cls(vocab, merges)  # type: ignore[arg-type]

    @classmethod
    def tiny(cls) -> GlideTokenizer:
        """Byte-level vocabulary (256 byte symbols in GPT-2 order + end token), no merges."""
        symbols = [*byte_chars(), END_TEXT]
        return cls({s: i for i, s in enumerate(symbols)}, [])

    def encode(self, text: str) -> list[int]:
        return self._bpe.encode(text.lower(), add_special_tokens=False).ids

    def padded(self, tokens: list[int], ctx: int) -> tuple[list[int], list[bool]]:
        tokens = list(tokens[:ctx])
        pad = ctx - len(tokens)
        return tokens + [self.end_token] * pad, [True] * len(tokens) + [False] * pad
