"""Flat, per-variant model cards (like timm's pretrained cfg).

A card says where weights come from, what input the model expects, its
licence and paper, and for detectors the training recipe with the source of
every number.  One card per variant; no inheritance chains.  Cards are plain
data and import no deep-learning library, so ``diffzoo list`` stays fast.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


def _jsonable(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def canonical_json(obj: Any, utf8: bool = False) -> bytes:
    """The canonical JSON bytes of ``obj``: sorted keys, no spaces, dataclasses as dicts, any
    other non-JSON value as its ``str``.  The one serialisation every hash in diffzoo is made of.

    ``utf8=False`` (identifiers: cache keys, record ids, suite definition hashes): non-ASCII
    characters escaped (``\\u00e9``), NaN written as ``NaN``.  ``utf8=True`` (a record's field
    digests and content digest, metric-state files): characters as UTF-8, NaN refused (records
    hold null).  The two forms differ only there, and each keeps the bytes its hashes were made
    of, so no stored id, key or digest moves."""
    return json.dumps(_jsonable(obj), sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=not utf8,
                      allow_nan=not utf8).encode("utf-8")


def stable_hash(obj: Any, length: int = 16) -> str:
    """sha256 of :func:`canonical_json` of ``obj`` (its identifier form), hex prefix."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()[:length]


@dataclass(frozen=True)
class RecipeValue:
    """One training-recipe number and where it comes from."""

    value: Any
    source: str


@dataclass(frozen=True)
class Published:
    """A number the authors of a release published for it: on ``benchmark`` (its ``split``),
    ``metric`` as they define it (``definition``: how their code computes it), from ``source``."""

    benchmark: str
    split: str
    metric: str
    definition: str
    value: float
    source: str


@dataclass(frozen=True)
class Release:
    """Trained weights a detector's authors released, and how diffzoo reads them as released.

    ``files``: the file name(s) as released (one, or one per part of a multi-file release);
    ``source``: where the authors publish them (a URL, a Hugging Face id, a netdisk page);
    ``sha256``: per file, as the authors publish it (None: unpublished; the hash of the file
    loaded first is then recorded).  How the tensors reach the detector's own keys:
    ``unwrap`` (the wrapper dict keys tried in order, e.g. ``model``, ``state_dict``),
    ``strip`` (key prefixes removed, e.g. ``module.``), ``prefixes`` (per file, prepended to its
    keys: the part of the model it holds) and ``convert`` (``"module:function"``, a family's own
    mapping of the flat dict onto the detector's keys).  ``allow``: the harmless non-tensor
    types the files hold besides tensors (``argparse.Namespace`` for saved arguments), by
    ``module.name``.  ``tasks``: what the released model does (binary localization, mostly).
    ``built``: keys of the detector the release does not hold, constants of its class kept as
    built (IMDL-BenCo's PSCC-Net keeps its loss's class weights as a parameter).
    ``train_datasets``: the diffzoo datasets (adapter names) it was trained on: scoring one of
    them scores training images, refused unless ``--allow-train-overlap``."""

    name: str
    files: tuple[str, ...]
    source: str
    trained_on: str
    protocol: str
    licence: str
    sha256: tuple[str | None, ...] = ()
    unwrap: tuple[str, ...] = ("model", "state_dict", "network")
    strip: tuple[str, ...] = ("module.",)
    prefixes: tuple[str, ...] = ()
    convert: str | None = None
    allow: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ("binary",)
    built: tuple[str, ...] = ()
    train_datasets: tuple[str, ...] = ()
    published: tuple[Published, ...] = ()
    citation: str = ""


def family_of(name: str) -> str:
    """The family a card's name begins with: ``segformer`` of ``segformer.b2``, ``sdxl`` of
    ``sdxl.tiny``."""
    return name.split(".", 1)[0]


@dataclass(frozen=True)
class DetectorCard:
    """Everything needed to build, train and cite one detector variant."""

    name: str  # "family.tag", e.g. "segformer.b2"
    description: str
    tasks: tuple[str, ...]  # subset of binary / semantic / classification
    weights: str | None = None  # hub id of pretrained backbone weights, None = from scratch
    input_size: int = 512
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    default_threshold: float = 0.5
    licence: str = ""
    paper: str = ""
    arch: dict[str, Any] = field(default_factory=dict)
    recipe: dict[str, RecipeValue] = field(default_factory=dict)
    # Fields added after the first records were written: left out of
    # ``to_dict`` at their default, so the hashes of existing cards (cache
    # keys, record ids) stay as they were.
    weights_sha256: str | None = None  # published sha256 of the weights file, if the source gives one
    trainable: bool = True  # False: used as built (heuristics, frozen zero-shot models); never trained
    gives_image_score: bool = False
    """True for a detector that gives pixels and an image score of its own (IMDL-BenCo's
    ``pred_label``): its image cases are planned twice, judged by the predicted edited area
    and by that score.  A pure classifier (only ``classification``) leaves it False: its
    score is its only judge."""
    releases: tuple[Release, ...] = ()
    """Trained weights its authors released (``--weights released:NAME``).  Facts about weights
    that exist, not about the model built: never part of :meth:`to_dict` (cache keys, records)."""

    def __post_init__(self) -> None:
        """Tasks diffzoo has not, a threshold no probability passes, or an input no model takes, refused
        where the card is made."""
        from diffzoo.harness.core.errors import ConfigError
        from diffzoo.harness.core.types import TASKS

        # a text would be read as its letters, or matched as a substring ("semantic" in "binary,semantic")
        if isinstance(self.tasks, str) or not self.tasks or any(t not in TASKS for t in self.tasks):
            raise ConfigError(f"detector card {self.name}: tasks must be a tuple of one or more of "
                              f"{', '.join(TASKS)}, got {self.tasks!r}")
        t = self.default_threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < 1:  # NaN fails too
            raise ConfigError(f"detector card {self.name}: default_threshold must be a number in [0, 1), got {t!r}")
        if isinstance(self.input_size, bool) or not isinstance(self.input_size, int) or self.input_size < 1:
            raise ConfigError(f"detector card {self.name}: input_size must be an integer >= 1, "
                              f"got {self.input_size!r}")

    @property
    def family(self) -> str:
        return family_of(self.name)

    @property
    def tag(self) -> str:
        return self.name.split(".", 1)[1] if "." in self.name else ""

    def recipe_values(self) -> dict[str, Any]:
        return {k: v.value for k, v in self.recipe.items()}

    def release(self, name: str) -> Release:
        """The release called ``name``; a ConfigError listing the card's releases otherwise."""
        from diffzoo.harness.core.errors import ConfigError

        for release in self.releases:
            if release.name == name:
                return release
        known = ", ".join(r.name for r in self.releases) or "none"
        raise ConfigError(f"detector {self.name} has no released weights called {name!r}; its releases: {known} "
                          "(diffzoo list detectors --released)")

    def check_pretrained(self, pretrained: bool) -> str:
        """The card's ``weights`` ("" when it has none); a ModelError when ``pretrained`` asks
        a card that has none for them."""
        from diffzoo.harness.core.errors import ModelError

        if pretrained and not self.weights:
            raise ModelError(f"detector {self.name} has no pretrained weights; build it with pretrained=False")
        return self.weights or ""

    def to_dict(self) -> dict[str, Any]:
        d = _jsonable(self)
        del d["releases"]
        for name, default in _LATE_FIELDS.items():
            if d.get(name) == default:
                del d[name]
        return d

    def fingerprint(self) -> str:
        return stable_hash(self.to_dict())


_LATE_FIELDS = {"weights_sha256": None, "trainable": True, "gives_image_score": False}


@dataclass(frozen=True)
class GeneratorCard:
    """One editor variant: which diffusers pipeline, which weights, how run."""

    name: str  # "family.tag", e.g. "sdxl.base", "sdxl.tiny"
    description: str
    pipeline: str  # diffusers class name
    weights: str | None  # hub id; None for tiny random-weight builds
    native_inpaint: bool = True
    tiny: bool = False
    resolution: int = 1024
    steps: int = 30
    guidance_scale: float = 7.0
    strength: float = 1.0
    licence: str = ""
    paper: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return family_of(self.name)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(self)


def register_cards(register: Any, cards: Any, target: str, default: str | None = None) -> None:
    """Register each card under its name with the lazy ``"module:attr"``
    ``target``; ``default`` names the family's default card.  What a
    ``register_detectors`` / ``register_generators`` hook usually does."""
    for card in cards:
        register(card.name, target, card=card, default=card.name == default, description=card.description)
