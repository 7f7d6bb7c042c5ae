"""Seeded, balanced choices of a generated dataset: turns, bases, editors, edit types.

``diffzoo generate`` must give the same sample for the same (seed, id) however
many ranks run it and however often it is interrupted, so nothing here
depends on the order samples are made in.  Ids are grouped into fixed blocks
(``block`` ids, a multiple of the turn-ratio sum); each block's choices come
from a generator seeded with (seed, block) alone:

- turn counts: exactly the ratio in every block (1:4:5 over 20 ids gives
  2, 8 and 10 samples with 1, 2 and 3 edits);
- real/AI bases, editors and edit types: round-robin over the whole id
  sequence (a block gets the slots its position in that sequence gives it;
  counts of any prefix of whole blocks differ by at most one), then shuffled
  within the block.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffzoo.generators.generate.prompts import EDIT_TYPES
from diffzoo.harness.core.errors import ConfigError

MIN_BLOCK = 20
MAX_RATIO_SUM = 1000
BASE_KINDS: tuple[str, ...] = ("real", "ai")
_BLOCK_KEY = 0x626C6B  # "blk": stream of the per-block choices


def split_counts(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` items apportioned to ``weights`` (largest remainder; ties to the first)."""
    raw = [total * w / sum(weights) for w in weights]
    counts = [int(r) for r in raw]
    for i in sorted(range(len(raw)), key=lambda i: counts[i] - raw[i])[: total - sum(counts)]:
        counts[i] += 1
    return counts


def balanced(rng: np.random.Generator, items: Sequence[Any], counts: Sequence[int]) -> list[Any]:
    """Each item repeated its count, shuffled."""
    out = [item for item, c in zip(items, counts) for _ in range(c)]
    rng.shuffle(out)
    return out


def sample_rng(seed: int, *keys: int) -> np.random.Generator:
    """A generator seeded with ``(seed, *keys)`` only."""
    return np.random.default_rng([int(seed), *(int(k) for k in keys)])


def parse_turn_ratio(spec: str | Sequence[int]) -> tuple[int, ...]:
    """``"1:4:5"`` -> (1, 4, 5): relative counts of samples with 1, 2, 3, ... edits; ``1:4:5:0``
    and ``2:8:10`` are the same ratio, and the same one is returned."""
    parts = spec.split(":") if isinstance(spec, str) else list(spec)
    try:
        ratio = tuple(int(p) for p in parts)
        if not isinstance(spec, str) and ratio != tuple(parts):  # int() would read 0.5 as 0
            raise ValueError
    except (ValueError, TypeError):
        raise ConfigError(f"turn ratio {spec!r}: expected whole numbers such as 1:4:5") from None
    if not ratio or any(r < 0 for r in ratio) or not sum(ratio):
        raise ConfigError(f"turn ratio {spec!r}: needs non-negative counts, not all zero (e.g. 1:4:5)")
    ratio = ratio[: max(n for n, r in enumerate(ratio, start=1) if r)]  # trailing zero counts make the same samples
    ratio = tuple(r // math.gcd(*ratio) for r in ratio)  # a proportional ratio makes the same samples
    if sum(ratio) > MAX_RATIO_SUM:  # a block of ids holds the ratio exactly, and each block is planned whole
        raise ConfigError(f"turn ratio {spec!r}: its counts sum to {sum(ratio)}, at most {MAX_RATIO_SUM} "
                          "(a smaller ratio such as 1:4:5 says the same)")
    return ratio


@dataclass(frozen=True)
class SampleSchedule:
    """What one sample gets: edit count, base kind (and its ordinal among that kind), per-turn editor and type."""

    index: int
    base: str  # real | ai
    base_ordinal: int
    editors: tuple[str, ...]
    edit_types: tuple[str, ...]

    @property
    def n_turns(self) -> int:
        return len(self.editors)


class Schedule:
    """Per-sample choices for ids 0, 1, 2, ... (see the module docstring)."""

    def __init__(
        self,
        seed: int,
        editors: Sequence[str],
        turn_ratio: Sequence[int] = (1, 4, 5),
        ai_fraction: float = 0.5,
    ) -> None:
        if not editors:
            raise ConfigError("at least one editor is needed")
        if not 0.0 <= ai_fraction <= 1.0:
            raise ConfigError(f"--ai-bases must be in [0, 1] (the fraction of bases generated), got {ai_fraction}")
        self.seed = int(seed)
        self.editors = tuple(editors)
        self.turn_ratio = parse_turn_ratio(turn_ratio)
        self.ai_fraction = float(ai_fraction)
        unit = sum(self.turn_ratio)
        self.block = unit * math.ceil(MIN_BLOCK / unit)
        self._turn_counts = split_counts(self.block, self.turn_ratio)
        self._turns_per_block = sum(n * c for n, c in enumerate(self._turn_counts, start=1))

    def _base_weights(self) -> tuple[float, float]:
        return (1.0 - self.ai_fraction, self.ai_fraction)

    @staticmethod
    def _slots(start: int, length: int, weights: Sequence[float]) -> list[int]:
        """Counts per item of weighted round-robin slots [start, start + length)."""
        end, begin = split_counts(start + length, weights), split_counts(start, weights)
        return [e - b for e, b in zip(end, begin)]

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one Schedule per run; blocks are reused in order
    def _block_plan(self, b: int) -> tuple[SampleSchedule, ...]:
        rng = sample_rng(self.seed, _BLOCK_KEY, b)
        n_turns = balanced(rng, range(1, len(self.turn_ratio) + 1), self._turn_counts)
        base_counts = self._slots(b * self.block, self.block, self._base_weights())
        bases = balanced(rng, BASE_KINDS, base_counts)
        t0, t = b * self._turns_per_block, self._turns_per_block
        editors = balanced(rng, self.editors, self._slots(t0, t, (1.0,) * len(self.editors)))
        types = balanced(rng, EDIT_TYPES, self._slots(t0, t, (1.0,) * len(EDIT_TYPES)))
        seen = dict(zip(BASE_KINDS, split_counts(b * self.block, self._base_weights())))  # of earlier blocks
        out, cursor = [], 0
        for pos in range(self.block):
            k = n_turns[pos]
            kind = bases[pos]
            out.append(SampleSchedule(
                index=b * self.block + pos,
                base=kind,
                base_ordinal=seen[kind],
                editors=tuple(editors[cursor:cursor + k]),
                edit_types=tuple(types[cursor:cursor + k]),
            ))  # fmt: skip
            seen[kind] += 1
            cursor += k
        return tuple(out)

    def real_count(self, n: int) -> int:
        """How many of samples 0..n-1 have a real base (their ordinals are 0 to that count - 1)."""
        whole, rest = divmod(n, self.block)  # whole blocks take their round-robin slots
        return split_counts(whole * self.block, self._base_weights())[0] + sum(
            s.base == "real" for s in self._block_plan(whole)[:rest])

    def sample(self, index: int) -> SampleSchedule:
        """The choices of sample ``index`` (0-based)."""
        if index < 0:
            raise ConfigError(f"sample index must be >= 0, got {index}")
        return self._block_plan(index // self.block)[index % self.block]
