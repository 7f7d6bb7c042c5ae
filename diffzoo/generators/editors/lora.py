"""LoRA adapters and scheduler swaps for diffusers editor cards.

A card lists its LoRAs in ``options["loras"]``: a tuple of plain dicts

- ``source``: a local ``.safetensors`` file (or its folder), or a hub repository id (never one written as a
  path, ``./x``: :func:`~diffzoo.harness.core.fsutil.written_as_path`);
- ``weight_name``: the file inside that repository (hub sources only);
- ``scale``: adapter weight (default 1.0);
- ``fuse``: merge into the base weights (default True; ``pipe.fuse_lora``
  then ``pipe.unload_lora_weights``, so inference runs plain layers);
- ``tiny_seed``: tiny cards only, a random LoRA made offline (``tiny.components.tiny_lora_state_dict``).

``options["scheduler"]`` (``{"class": "DDIMScheduler", **config}``) replaces
the pipeline's scheduler from its own config, as distilled LoRAs such as
Hyper-SD require.  :func:`with_lora` attaches any local LoRA file to any
diffusers card; it is what ``diffzoo generate --lora PATH`` calls.  Loading
uses diffusers' ``load_lora_weights`` (peft backend; kohya and diffusers
layouts are converted by diffusers). :func:`drop_log_message` keeps diffusers' loading
messages that say nothing about the run out of the log.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from diffzoo.generators.diffusers_classes import diffusers_class
from diffzoo.harness.core.cards import GeneratorCard
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsFileError, WeightsUnavailableError
from diffzoo.harness.core.fsutil import require_file, written_as_path
from diffzoo.harness.core.hub import hub_offline, hub_unreachable
from diffzoo.harness.models.weights import load_weights

log = logging.getLogger(__name__)


def card_loras(card: GeneratorCard) -> list[dict[str, Any]]:
    """The card's LoRA specs with defaults filled in."""
    out = []
    for i, spec in enumerate(card.options.get("loras") or ()):
        spec = {"scale": 1.0, "fuse": True, "weight_name": None, **dict(spec)}
        spec.setdefault("adapter_name", f"lora{i}")
        out.append(spec)
    return out


def with_lora(card: GeneratorCard, path: str | Path, scale: float = 1.0, fuse: bool = True) -> GeneratorCard:
    """A copy of ``card`` that loads the LoRA file ``path`` on top of its pipeline.

    The new card is named ``<card.name>+lora-<file stem>`` (same family, so
    the editor keeps its label class); earlier LoRAs of the card are kept.
    Plain data: nothing is loaded until the editor builds its pipeline.
    """
    file = Path(path).expanduser()
    require_file(file, "LoRA file", " (expected a .safetensors file)")
    _check_lora_capable(card)
    _check_lora_file(card, file)
    spec = {"source": str(file.resolve()), "scale": float(scale), "fuse": bool(fuse)}
    loras = (*(card.options.get("loras") or ()), spec)
    return dataclasses.replace(
        card,
        name=f"{card.name}+lora-{file.stem.replace(' ', '_')}",
        description=f"{card.description} + LoRA {file.name} (scale {scale:g}{', fused' if fuse else ''})",
        options={**card.options, "loras": loras},
    )


def _check_lora_capable(card: GeneratorCard) -> None:
    """A ConfigError unless the card's pipeline is a diffusers class with LoRA loading."""
    cls = diffusers_class(card.pipeline)
    if cls is None or not hasattr(cls, "load_lora_weights"):
        what = "is not a diffusers pipeline" if cls is None else "has no LoRA support in diffusers"
        raise ConfigError(f"generator {card.name!r}: {card.pipeline} {what}; it takes no LoRA")


def _check_lora_file(card: GeneratorCard, file: Path) -> None:
    """A WeightsFileError (exit 2) unless ``file`` reads as weights (a safetensors file: its header
    alone) naming some LoRA tensor: the diffusers, PEFT, kohya and XLabs layouts all say ``lora``."""
    what = f"LoRA for {card.name!r}"
    held = load_weights(file, "the LoRA's publisher", what=what, probe=True)
    names = [str(k) for k in held] if isinstance(held, (list, dict)) else []
    if not any("lora" in name.lower() for name in names):
        example = f" (e.g. {names[0]!r})" if names else ""
        raise WeightsFileError(f"{what}: {file} holds no LoRA: none of its {len(names)} tensor name(s) says "
                               f"lora{example}; give a LoRA .safetensors file")


def lora_summary(card: GeneratorCard) -> list[dict[str, Any]]:
    """What the metadata of an edit records about the card's LoRAs."""
    keep = ("source", "weight_name", "scale", "fuse", "tiny_seed")
    return [{k: s[k] for k in keep if s.get(k) is not None} for s in card_loras(card)]


def resolve_lora_files(card: GeneratorCard) -> list[Path | None]:
    """The local file of every LoRA (None for tiny random ones), fetched or found in the HF cache.

    Runs before the base pipeline is built, so a missing LoRA fails fast.
    Offline (``HF_HUB_OFFLINE``) only the cache is searched; a LoRA that is
    not there raises :class:`WeightsUnavailableError` naming repository and file.
    """
    files: list[Path | None] = []
    for spec in card_loras(card):
        if spec.get("tiny_seed") is not None:
            if not card.tiny:
                raise ConfigError(f"generator {card.name!r}: a random tiny LoRA needs a tiny card")
            files.append(None)
            continue
        source = str(spec.get("source") or "")
        local = Path(source).expanduser()
        if local.is_dir() and spec["weight_name"]:
            local = local / spec["weight_name"]
        if local.is_file():
            files.append(local)
        elif spec["weight_name"] and not local.exists() and written_as_path(source) is None:
            files.append(_hub_file(card, source, spec["weight_name"]))
        else:
            raise ConfigError(f"generator {card.name!r}: LoRA file {str(local)!r} does not exist")
    return files


def _hub_file(card: GeneratorCard, repo: str, filename: str) -> Path:
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(repo, filename, local_files_only=hub_offline() or hub_unreachable(repo)))
    except Exception as exc:  # hub errors are OSError/HTTP/ValueError subclasses; all mean "not here"
        detail = f"LoRA file {filename!r}"
        if card.weights:
            detail += f" for the base pipeline {card.weights}"
        raise WeightsUnavailableError(
            f"generator {card.name!r}",
            repo,
            f"{detail}; {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            fetch=f"`hf download {repo} {filename}`",
        ) from exc


def apply_scheduler(pipe: Any, card: GeneratorCard) -> None:
    """Replace the pipeline's scheduler as ``options["scheduler"]`` says (from the pipeline's own config)."""
    spec = dict(card.options.get("scheduler") or {})
    if not spec:
        return
    import diffusers

    name = spec.pop("class")
    cls = diffusers_class(name)
    if cls is None:
        raise ModelError(f"generator {card.name!r}: diffusers {diffusers.__version__} has no scheduler {name}")
    pipe.scheduler = cls.from_config(pipe.scheduler.config, **spec)


def apply_loras(pipe: Any, card: GeneratorCard, files: list[Path | None]) -> None:
    """Load (and fuse) the card's LoRAs into ``pipe``; ``files`` from :func:`resolve_lora_files`."""
    specs = card_loras(card)
    if not specs:
        return
    if not hasattr(pipe, "load_lora_weights"):
        raise ModelError(f"generator {card.name!r}: {type(pipe).__name__} does not support LoRA adapters")
    # a UNet-only LoRA makes diffusers warn once per text encoder that it has no keys for it
    drop_log_message("No LoRA keys associated to", "diffusers.loaders.lora_base", "diffusers.loaders.peft")
    for spec, file in zip(specs, files):
        name = spec["adapter_name"]
        try:
            if file is None:
                from diffzoo.generators.tiny.components import tiny_lora_state_dict

                pipe.load_lora_weights(tiny_lora_state_dict(pipe, int(spec["tiny_seed"])), adapter_name=name)
            else:
                pipe.load_lora_weights(str(file.parent), weight_name=file.name, adapter_name=name)
        except (ValueError, KeyError, RuntimeError, OSError) as exc:
            what = spec.get("source") or "tiny"
            raise ModelError(f"generator {card.name!r}: LoRA {what} does not load: {exc}") from exc
        if spec["fuse"]:
            pipe.fuse_lora(lora_scale=float(spec["scale"]), adapter_names=[name])
    unfused = [s for s in specs if not s["fuse"]]
    if unfused:
        pipe.set_adapters([s["adapter_name"] for s in unfused], adapter_weights=[float(s["scale"]) for s in unfused])
    else:
        pipe.unload_lora_weights()  # fused into the base weights: drop the adapter layers
    log.info("generator %s: %d LoRA(s) loaded (%d fused)", card.name, len(specs), len(specs) - len(unfused))


class _Drop(logging.Filter):
    """Drops the records of a logger whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def drop_log_message(text: str, *loggers: str) -> None:
    """Keep diffusers' messages that say nothing about the run (containing ``text``) out of
    ``loggers``; each filter is added once."""
    for name in loggers:
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) and f.text == text for f in logger.filters):
            logger.addFilter(_Drop(text))
