"""``diffzoo generate``: new DiffSeg30k-style data with exact labels, resumable and sharded.

Per sample: a base (real from a folder or COCO; AI from text to image) ->
candidate regions (given masks, COCO instances, open-vocabulary detection +
SAM, or random shapes; AI bases use open-vocab when chosen, else random) ->
the scheduled 1..3 turns (``schedule.py``: turn ratio, real/AI, editors and
edit types balanced), each on a region drawn balanced over area bins with a
prompt per editor call (templates or a VLM) -> the quality filter
(``quality.py``) -> the label map (``multiturn.py``: later turns overwrite
earlier ones) -> the DiffSeg30k layout (``layout.py``).

Every random choice of a sample comes from (seed, sample index) alone, so
the dataset does not depend on the rank count or on interruptions.  Rank 0
checks the output folder (a resumed run must have the same settings), lists
the unfinished ids and broadcasts them; every rank makes its shard of them;
rank 0 then writes ``manifest.jsonl`` (sorted by id) and ``generate.json``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.generate.defaults import GenerateConfig
from diffzoo.generators.generate.layout import IMAGE_DIR, RECORDS, STATE_DIR, BackgroundWriter, SampleStore
from diffzoo.generators.generate.multiturn import Edited, TurnPlan, class_names, edit_sample, sample_row, torch_threads
from diffzoo.generators.generate.quality import QualityFilter
from diffzoo.generators.generate.regions import Region, choose_region
from diffzoo.generators.generate.schedule import SampleSchedule, Schedule, parse_turn_ratio, sample_rng
from diffzoo.harness.core.errors import ConfigError, DiffzooError, no_value
from diffzoo.harness.core.fsutil import (
    atomic_write_text,
    check_usable_dir,
    file_kind,
    lock_open_file,
    not_regular,
    read_json,
    sha256_file,
)
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.protocols import Generator
from diffzoo.harness.core.runlog import LOGS_DIR, RunLog, log_relpath
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.data.imageio import MAX_PIXELS_ENV, max_pixels
from diffzoo.harness.data.labelmaps import LABELS_FILE
from diffzoo.harness.data.metadata import MANIFEST_FILE

log = logging.getLogger(__name__)

GENERATE_VERSION = 1  # bump when a change alters the samples a config produces
CONFIG_FILE = "config.json"
LOCK_FILE = "lock"  # held by the run writing the folder
SUMMARY_FILE = "generate.json"
FROM_FILES = ("bases", "regions", "captions", "loras")
"""The settings a resumed run must share that are read from files the options name (their names
and sizes, a caption count), not from the options alone."""
REGION_KINDS = ("masks:DIR", "coco", "open-vocab", "random")
WRITES = (IMAGE_DIR, f"{STATE_DIR}/{RECORDS}", f"{STATE_DIR}/{CONFIG_FILE}", f"{STATE_DIR}/{LOCK_FILE}", LABELS_FILE,
          MANIFEST_FILE, SUMMARY_FILE, LOGS_DIR)
"""The paths a run writes in its output folder (none may go through a symbolic link)."""
_SAMPLE_KEY, _TURN_KEY = 0x736D70, 0x74726E
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class GenerateSummary:
    out: Path
    accepted: int
    rejected: int
    made: int  # samples finished by this run (all ranks)
    reused: int  # samples finished by earlier runs
    label_space: LabelSpace
    rejections: list[dict[str, str]] = field(default_factory=list)
    beyond: int = 0  # samples of ids n and above (an earlier run's larger --n): kept, and in the counts above


class DatasetGenerator:
    """One ``diffzoo generate`` run.  Components may be injected (tests, custom models):
    ``editors`` (editor name -> Generator), ``regions`` (source for real bases),
    ``ai_regions``, ``prompter``, ``scorer``, ``t2i``, ``namer``."""

    def __init__(self, config: GenerateConfig, *, editors: Mapping[str, Generator] | None = None,
                 regions: Any = None, ai_regions: Any = None, prompter: Any = None, scorer: Any = None,
                 t2i: Any = None, namer: Any = None):
        if not 1 <= config.n <= 10**8:  # ids are 8 digits: beyond, they would sort out of order
            raise ConfigError(f"--n must be from 1 to 100,000,000 (ids have 8 digits), got {config.n}")
        if config.size is not None and config.size < 16:
            raise ConfigError(f"--size must be at least 16 px, got {config.size}")
        if config.size is not None and config.size**2 > max_pixels():  # a base diffzoo could never read back
            raise ConfigError(f"--size {config.size}: {config.size} x {config.size} px bases exceed the "
                              f"{max_pixels():,}-pixel limit on images (${MAX_PIXELS_ENV})")
        if config.threads is not None and config.threads < 1:
            raise ConfigError(f"--threads must be at least 1, got {config.threads}")
        if not math.isfinite(config.lora_scale):
            raise ConfigError(f"--lora-scale must be a finite number, got {config.lora_scale}")
        if not 0 <= config.min_score <= 5:  # the VLM scores on a 0-5 scale
            raise ConfigError(f"--min-score must be in [0, 5] (the VLM's scale), got {config.min_score}")
        for option, value, allowed in (("prompts", config.prompts, ("templates", "vlm")),
                                       ("objects", config.objects, ("vocabulary", "vlm"))):
            if value not in allowed:
                raise ConfigError(f"--{option} {value!r}: choose {' or '.join(allowed)}")
        if empty := next((o for o in ("vlm", "detector", "sam") if not getattr(config, o).strip()), None):
            raise no_value(f"--{empty} {getattr(config, empty)!r}")  # an unset variable, never the hub id ''
        out = Path(config.out)  # checked before any model is built: a new folder, an empty one or a run's own
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out} exists and is not a folder; choose a new or empty folder")
        if out.is_dir() and not (out / STATE_DIR).is_dir() and any(out.iterdir()):  # a run's, maybe before its config
            raise ConfigError(f"{out} is not empty and holds no diffzoo generate run; choose an empty --out")
        check_usable_dir(out, "--out")  # one that cannot be made (a read-only place) stops here, not at the first write
        for folder in (IMAGE_DIR, f"{STATE_DIR}/{RECORDS}"):  # a file there fails each sample's write, after its edits
            check_usable_dir(out / folder, "--out")
        self._injected = dict(editors or {})
        # an unknown name fails now, with a did-you-mean; a bare family is its default card, so sd2 is sd2.inpaint
        cards = [e if e in self._injected else get_registry().resolve("generator", e) for e in config.editors]
        if twice := next((card for i, card in enumerate(cards) if card in cards[:i]), None):
            raise ConfigError(f"--editors {','.join(config.editors)} names {twice} twice; keep one")
        self.config = config
        self.classes = class_names(config.editors)
        self.label_space = LabelSpace.from_editors(self.classes)
        # checks --ai-bases first: the options it decides are read are checked against it
        self.schedule = Schedule(config.seed, self.classes, config.turns, config.ai_fraction)
        unset, kind = GenerateConfig(config.out, config.editors), self.region_kind(config)
        for options, read, where in (  # an option given that nothing reads would be dropped unsaid
                (("bases",), config.ai_fraction < 1, "when some bases are real (--ai-bases under 1)"),
                (("captions", "t2i"), config.ai_fraction > 0, "for AI bases (--ai-bases above 0)"),
                (("objects", "detector", "sam"), kind == "open-vocab", "with --regions open-vocab"),
                (("min_score",), config.vlm_score, "with --vlm-score"),
                (("vlm",), "vlm" in (config.prompts, config.objects) or config.vlm_score,
                 "with --prompts vlm, --objects vlm or --vlm-score"),
                (("lora_scale",), bool(config.loras), "with --lora")):
            if not read and (given := [o for o in options if getattr(config, o) != getattr(unset, o)]):
                raise ConfigError(f"--{given[0].replace('_', '-')} is read only {where}; leave it out")
        self.quality = QualityFilter(config.min_area, config.max_area, config.min_changed, scorer=scorer,
                                     min_score=config.min_score, tries=config.tries)
        self._built: dict[str, Generator] = {}
        self._regions, self._ai_regions, self._prompter = regions, ai_regions, prompter
        self._t2i, self._namer = t2i, namer
        self.store = SampleStore(config.out)
        self.device = "cpu"
        self._held, self._locked = contextlib.ExitStack(), False  # the --out lock, held by rank 0 until run() ends

    @staticmethod
    def region_kind(config: GenerateConfig) -> str:
        """``--regions`` as given, else ``coco`` for COCO bases and ``random`` for others."""
        return config.regions or ("coco" if (config.bases or "").startswith("coco:") else "random")

    # -- setup ---------------------------------------------------------------------
    @functools.cached_property
    def _vlm(self) -> Any:  # one VLM for every role, built on first use
        from diffzoo.generators.generate.vlm import QwenVL

        return QwenVL(self.config.vlm, self.device)

    def _open_vocab(self) -> Any:
        from diffzoo.generators.generate.openvocab import GroundingDinoDetector, OpenVocabRegions, SamSegmenter

        namer = self._namer
        if namer is None and self.config.objects == "vlm":
            from diffzoo.generators.generate.vlm import VlmObjectNamer

            namer = VlmObjectNamer(self._vlm)
        return OpenVocabRegions(GroundingDinoDetector(self.config.detector, self.device),
                                SamSegmenter(self.config.sam, self.device), namer=namer)

    def _setup(self) -> dict[str, Any]:
        """Bases, region sources, prompter, scorer; returns the settings a resumed run must share."""
        from diffzoo.generators.generate.bases import AIBases, RealBases, check_bases
        from diffzoo.generators.generate.prompts import TemplatePrompter
        from diffzoo.generators.generate.regions import MaskFolderRegions, RandomRegions, listing_digest

        c = self.config
        loras = self._check_loras()
        kind = self.region_kind(c)
        if kind not in ("coco", "open-vocab", "random") and not kind.startswith("masks:"):
            raise ConfigError(f"--regions {kind!r}: choose {', '.join(REGION_KINDS)}")
        if kind == "masks:":  # an unset $DIR: pathlib would read "" as the current folder
            raise no_value(f"--regions {kind}")
        if c.ai_fraction >= 1 and (kind == "coco" or kind.startswith("masks:")):
            # COCO annotations and mask files describe real images only: they would be ignored
            raise ConfigError(f"--regions {kind}: with --ai-bases 1 every base is generated, and {kind} names "
                              "regions of real images only; use random or open-vocab, or give real --bases")
        settings: dict[str, Any] = {"regions": kind}
        self.real = self.ai = index = None
        if c.ai_fraction < 1:
            if not c.bases:
                raise ConfigError("--bases is needed unless --ai-bases is 1")
            refs, index = self._list_bases(c.bases)
            if self._regions is None:
                if kind == "coco":
                    if index is None:
                        raise ConfigError("--regions coco needs COCO bases (--bases coco:ANN.json:IMGDIR)")
                    from diffzoo.generators.generate.coco import CocoRegions

                    self._regions = CocoRegions(index)
                    usable = {im.id for im in index.usable_images(c.min_area, c.max_area)}
                    kept = [r for r in refs if r.coco_id in usable]
                    if refs and not kept:  # said, rather than "no usable real base images"
                        raise ConfigError(f"none of the {len(refs)} COCO base(s) has an instance whose area is "
                                          f"between --min-area {c.min_area:g} and --max-area {c.max_area:g}")
                    refs = kept
                elif kind.startswith("masks:"):
                    self._regions = MaskFolderRegions(kind.split(":", 1)[1])
                    self._outside(self._regions.folder, "masks")
                    kept = [r for r in refs if self._regions.files(r.key)]  # those with masks
                    if refs and not kept:
                        example = refs[0]
                        raise ConfigError(f"none of the {len(refs)} base(s) has masks in {kind}: the masks of "
                                          f"{example.source} go in {self._regions.folder / example.key}/*.png")
                    refs = kept
                    settings["regions"] = {"masks": self._regions.digest()}
                elif kind == "open-vocab":
                    self._regions = self._open_vocab()
                else:
                    self._regions = RandomRegions(c.min_area, c.max_area)
            self.real = RealBases(refs, c.seed, c.size)
            # every base's header, and all pixels of those the run reads, before any model loads
            sizes = check_bases(refs, c.size, c.bases, self.real.keys(self.schedule.real_count(c.n)),
                                random=isinstance(self._regions, RandomRegions))
            if isinstance(self._regions, MaskFolderRegions):
                self._regions.check(refs, sizes, c.min_area, c.max_area)
            settings["bases"] = (index.digest() if index is not None
                                 else {"folder": listing_digest((r.source, r.path) for r in refs)})
        if c.ai_fraction > 0:
            if self._ai_regions is None:
                self._ai_regions = ((self._regions or self._open_vocab()) if kind == "open-vocab"
                                    else RandomRegions(c.min_area, c.max_area))
            captions = self._captions(index)
            self.ai = AIBases(self._text2image(), captions, c.seed, c.size)
            settings.update(t2i=self.ai.name, captions=len(captions) if captions else None)
        if self._prompter is None:
            from diffzoo.generators.generate.vlm import VlmPrompter

            self._prompter = VlmPrompter(self._vlm) if c.prompts == "vlm" else TemplatePrompter()
        if c.vlm_score and self.quality.scorer is None:
            from diffzoo.generators.generate.vlm import VlmScorer

            self.quality.scorer = VlmScorer(self._vlm)
        # every model the run builds (each at its first sample) has its weights here, or the hub answers;
        # the text-to-image model's only when a sample of 0..n-1 is AI (--ai-bases 0.01 --n 20 holds none)
        t2i = self.ai and self.schedule.real_count(c.n) < c.n and self.ai.t2i
        for model in (*map(self._editor, self.classes), t2i, self.__dict__.get("_vlm"),
                      *(getattr(r, part, None) for r in (self._regions, self._ai_regions)
                        for part in ("detector", "segmenter"))):
            getattr(model, "check_weights", lambda: None)()
        areas = {spec: [o["min_area"], o["max_area"]] for spec, name in zip(c.editors, self.classes)  # an editor's
                 if isinstance(o := getattr(self._editor(name), "label_options", None), dict)}  # own bounds reject
        return {
            "version": GENERATE_VERSION, "seed": c.seed, "editors": list(c.editors),
            "labels": list(self.label_space.names), "turns": list(self.schedule.turn_ratio),
            "ai_fraction": c.ai_fraction, "size": c.size, "prompts": c.prompts, "objects": c.objects,
            "vlm": c.vlm if (c.prompts == "vlm" or c.objects == "vlm" or c.vlm_score) else None,
            "open_vocab": [c.detector, c.sam] if kind == "open-vocab" else None,
            "area_bins": list(c.area_bins), "quality": self.quality.settings(), "loras": loras,
            "threads": c.threads, **settings,  # torch's CPU kernels may sum in another order on other threads
            **({"editor_areas": areas} if areas else {}),
        }  # fmt: skip

    def _check_loras(self) -> list[dict[str, Any]] | None:
        """Each ``--lora`` checked (the editor is chosen and takes LoRAs, the file exists)."""
        from diffzoo.generators.editors.lora import with_lora

        out: list[dict[str, Any]] = []
        for editor, path in self.config.loras:
            if any(lora["editor"] == editor for lora in out):  # an editor loads one (_editor)
                raise ConfigError(f"--lora {editor}={path}: {editor} has a --lora already; give one per editor")
            if editor not in self.config.editors:
                raise ConfigError(f"--lora {editor}={path}: {editor!r} is not one of --editors")
            if editor in self._injected:
                raise ConfigError(f"--lora {editor}={path}: the editor was passed in built; attach the LoRA to it")
            with_lora(get_registry().get("generator", editor).card, path, self.config.lora_scale)
            out.append({"editor": editor, "file": Path(path).name, "bytes": Path(path).stat().st_size,
                        "scale": self.config.lora_scale})
        return out or None

    def _outside(self, folder: Path, what: str) -> None:
        """--out may not lie in a folder the run reads (the bases', the masks'): the images it writes
        would be read there by the next run, so a resumed or longer run would find other files than
        the first and refuse to go on."""
        if Path(os.path.realpath(self.config.out)).is_relative_to(os.path.realpath(folder)):
            raise ConfigError(f"--out {self.config.out} is inside the {what}' folder {folder}: the images it writes "
                              f"would be read as {what} the next time; choose an --out outside it")

    def _list_bases(self, spec: str) -> tuple[list[Any], Any]:
        from diffzoo.generators.generate.bases import BaseRef, list_folder

        if not spec.startswith("coco:"):
            self._outside(Path(spec), "bases")
            return list_folder(Path(spec)), None
        from diffzoo.generators.generate.coco import CocoIndex, parse_coco_spec

        ann, images = parse_coco_spec(spec)
        index = CocoIndex(ann, images)
        refs = []
        for image_id in sorted(index.coco.imgs):
            im = index.image(image_id)
            refs.append(BaseRef(Path(im.file_name).stem, images / im.file_name, f"coco:{im.file_name}", im.id,
                                (im.height, im.width)))
        return refs, index

    def _captions(self, index: Any) -> list[str] | None:
        """--captions, else the captions file beside the instances file of COCO bases (``index``)."""
        from diffzoo.generators.generate.coco import find_captions, load_captions

        path, option = self.config.captions, "--captions"
        if path is None and index is not None:
            path, option = find_captions(index.annotations), ""
        return load_captions(Path(path), option) if path is not None else None

    def _text2image(self) -> Any:
        if self._t2i is None:
            from diffzoo.generators.editors.text2image import TextToImage, get_t2i_card

            tiny = all(".tiny" in e for e in self.config.editors)
            name = self.config.t2i or ("sd-t2i.tiny" if tiny else "sdxl-t2i.base")
            self._t2i = TextToImage(get_t2i_card(name), device=self.device)
        return self._t2i

    def _editor(self, name: str) -> Generator:
        if name not in self._built:
            spec = self.config.editors[self.classes.index(name)]
            if spec in self._injected:
                self._built[name] = self._injected[spec]
            else:
                from diffzoo.harness.run.factories import create_generator

                lora = dict(self.config.loras).get(spec)
                options = {"lora": lora, "lora_scale": self.config.lora_scale} if lora else {}
                self._built[name] = create_generator(spec, device=self.device, **options)
        return self._built[name]

    # -- one sample ------------------------------------------------------------------
    def _tries(self, s: SampleSchedule, turn: int, candidates: Sequence[Region], image: np.ndarray,
               done: Sequence[TurnPlan]) -> Iterator[TurnPlan]:
        c = self.config
        for attempt in range(c.tries):
            rng = sample_rng(c.seed, _TURN_KEY, s.index, turn, attempt)
            region = choose_region(candidates, rng, min_area=c.min_area, max_area=c.max_area, bins=c.area_bins,
                                   avoid=[d.region for d in done])
            if region is None:
                return
            prompts = self._prompter(image, region, s.edit_types[turn], rng)
            seeds = [int(rng.integers(2**31 - 1)) for _ in prompts]
            yield TurnPlan(s.editors[turn], s.edit_types[turn], region, tuple(zip(prompts, seeds)), attempt)

    def real_base(self, index: int) -> Any:
        """Sample ``index``'s real base (None for an AI base), or the error reading it
        raised: what loader workers read ahead of :meth:`make`."""
        from diffzoo.harness.core.parallel import sendable

        s = self.schedule.sample(index)
        try:
            return self.real.get(s.base_ordinal) if s.base == "real" else None
        except Exception as exc:
            return sendable(exc)

    def make(self, index: int, base: Any = None) -> tuple[Any, Edited]:
        """Base and edit outcome of sample ``index`` (deterministic; writes nothing);
        ``base``: its real base when read already (:meth:`real_base`)."""
        s = self.schedule.sample(index)
        rng = sample_rng(self.config.seed, _SAMPLE_KEY, index)
        if isinstance(base, BaseException):
            raise base
        if base is None:
            base = self.real.get(s.base_ordinal) if s.base == "real" else self.ai.get(s.base_ordinal, rng)
        candidates = (self._regions if s.base == "real" else self._ai_regions).candidates(base, rng)
        sources = [
            lambda image, done, t=t: self._tries(s, t, candidates, image, done) for t in range(s.n_turns)
        ]  # fmt: skip
        return base, edit_sample(base.image, sources, self._editor, self.label_space, self.quality)

    # -- the run -----------------------------------------------------------------------
    def _lock(self) -> None:
        """Rank 0: hold the lock of --out's run folder until run() ends, once the folder is there (no
        refused run leaves one behind); another run holding it is refused."""
        out = Path(self.config.out)
        if self._locked or not (out / STATE_DIR).is_dir():
            return
        lock = out / STATE_DIR / LOCK_FILE
        if os.path.lexists(lock) and (kind := file_kind(lock)):  # opened to append, a FIFO would wait for ever
            raise not_regular(lock, kind)
        if not lock_open_file(self._held.enter_context(open(lock, "a")), wait=False):
            raise ConfigError(f"{out} is being written by another diffzoo generate run; let it finish, or choose "
                              "another --out")
        self._locked = True

    def _prepare(self, settings: dict[str, Any], ids: Sequence[str]) -> list[str]:
        """Rank 0: check or start the output folder; the ids still to make."""
        from diffzoo.harness.records.fields import json_kind

        out = Path(self.config.out)
        (out / STATE_DIR).mkdir(parents=True, exist_ok=True)
        self._lock()
        path = out / STATE_DIR / CONFIG_FILE
        if os.path.lexists(path):
            try:
                saved = read_json(path)
                why = "" if isinstance(saved, dict) else f"{json_kind(saved)}, not an object"
            except ValueError as exc:  # not JSON, or nested too deep
                saved, why = {}, str(exc).splitlines()[0]
            if why:  # cut short or edited: what the samples were made with is unknown
                raise ConfigError(f"{path} does not hold the settings of a generate run ({why}); put back the one "
                                  "the run wrote, or choose a new --out")
            with contextlib.suppress(ConfigError, TypeError):  # saved with trailing zero counts: the same ratio
                saved["turns"] = list(parse_turn_ratio(saved.get("turns", ())))
            # settings that a folder never held are unknown: this run's are taken
            saved = {"threads": settings["threads"], "editor_areas": settings.get("editor_areas"), **saved}
            differ: list[str] = []
            for key in set(saved) | set(settings):
                was, now = saved.get(key), settings.get(key)
                if was == now:
                    continue
                if key == "quality" and isinstance(was, dict) and isinstance(now, dict):  # by its entries, each an
                    differ += [n for n in {**was, **now} if was.get(n) != now.get(n)]  # option (--min-changed)
                else:
                    differ.append(key)
            said = f"{', '.join(sorted(differ))} {'differs' if len(differ) == 1 else 'differ'}"
            if differ and not any(self.store.read(i) for i in self.store.recorded_ids()):
                # no sample holds the stored settings (a run stopped before its first): what it left is not data
                log.warning("%s holds no finished sample: this run's settings replace those stored (%s)", out, said)
                for leftover in [*(out / IMAGE_DIR).glob("*.png"), *self.store.records_dir.glob("*.json"),
                                 out / LABELS_FILE, out / MANIFEST_FILE, out / SUMMARY_FILE, path]:
                    if not leftover.is_dir():  # a folder there is said by the write that meets it
                        leftover.unlink(missing_ok=True)
            elif differ:
                # these settings are the named files' names and sizes: the same options may differ in them
                files = ("; a file added, removed or resized under --bases or --regions masks:DIR, or another "
                         "--captions or --lora file, counts" if set(differ) & set(FROM_FILES) else "")
                raise ConfigError(f"{out} was generated with other settings ({said}{files}); resume with the "
                                  f"same options {'and files ' if files else ''}or choose a new --out")
        elif self.store.recorded_ids():  # samples whose settings are gone: a resume could not check it shares them
            raise ConfigError(f"{path} is missing, and {out} holds samples a run made with its settings; put back "
                              "the one the run wrote, or choose a new --out")
        if not os.path.lexists(path):
            atomic_write_text(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")
        self.store.write_labels(self.label_space)
        if self.store.remove_stale_temp_files():
            log.info("removed temporary files of an interrupted run in %s", out)
        todo, read = [], functools.cache(self._read_sha256)  # a base of several samples is read once
        for i in ids:  # finished or rejected ones are done
            if (record := self.store.read(i)) is None:
                todo.append(i)
            elif (s := self.schedule.sample(int(i))).base == "real":
                ref = self.real.ref(s.base_ordinal)
                for key, stale in (  # an older record holds sizes alone
                        ("base_sha256", f"--bases: {ref.path} is not the file sample {i} was made from (its sha256 "
                                        "is not its record's); put that file back"),
                        ("masks_sha256", f"--regions masks:{getattr(self._regions, 'folder', '')}: the mask files of "
                                         f"{ref.source} are not those sample {i} was made from (their sha256 is not "
                                         "its record's); put them back")):
                    if key in record and read(ref).get(key) != record[key]:
                        raise ConfigError(f"{stale}, or choose a new --out")
        return todo

    def _read_sha256(self, ref: Any) -> dict[str, str]:
        """sha256 of the files a real base's samples read, as their records hold it: its file, its mask files."""
        from diffzoo.generators.generate.regions import MaskFolderRegions

        masks = self._regions.sha256(ref.key) if isinstance(self._regions, MaskFolderRegions) else None
        return {"base_sha256": sha256_file(ref.path), **({"masks_sha256": masks} if masks else {})}

    def run(self, progress: Progress | None = None) -> GenerateSummary | None:
        """Make every unfinished sample of ids 0..n-1; the summary on rank 0 (None on other ranks).
        Rank 0 leaves a log in ``out/logs/`` once the folder holds this run's settings."""
        from diffzoo.harness.core import distributed

        if distributed.launch_rank() != 0:  # known before the process group is joined
            return self._run(progress)
        out = Path(self.config.out)
        relpath = log_relpath("generate")
        logged = RunLog(out / relpath, lambda: out / relpath if (out / STATE_DIR / CONFIG_FILE).is_file() else None)
        with self._held, logged.attached():
            logged.note_command()
            start = time.monotonic()
            summary = self._run(progress, logged.note)
            assert summary is not None  # rank 0 always has it
            logged.note(f"done in {time.monotonic() - start:.0f} s: {summary.accepted} sample(s), {summary.made} "
                        f"made now, {summary.reused} from earlier runs, {summary.rejected} rejected"
                        f"{beyond_note(summary.beyond, self.config.n)}")
            return summary

    def _run(self, progress: Progress | None, note: Callable[[str], None] | None = None) -> GenerateSummary | None:
        from diffzoo.harness.core import distributed
        from diffzoo.harness.core.device import resolve_device
        from diffzoo.harness.core.parallel import ordered_map, resolve_workers

        self.device = str(distributed.init(resolve_device(self.config.device)))
        distributed.on_main(self._lock)  # a resumed run's folder: another run writing it is refused before setup
        settings = self._setup()
        ids = [f"{i:08d}" for i in range(self.config.n)]
        todo, error = None, None
        if distributed.is_main():
            try:
                todo = self._prepare(settings, ids)
            except DiffzooError as exc:
                error = exc
        todo, message = distributed.broadcast((todo, str(error) if error else None))
        if error is not None:
            raise error
        if message is not None:
            raise ConfigError(f"rank 0 stopped: {message}")
        if note is not None:
            note(f"settings: {json.dumps(settings, sort_keys=True, default=str)}")
            note(f"{len(todo)} of {len(ids)} sample(s) to make on {self.device} "
                 f"({distributed.world_size()} rank(s))")
        mine = distributed.shard(todo)
        threads = self.config.threads if self.device.startswith("cpu") else None
        workers = resolve_workers(self.config.workers, self.device, threads)
        if progress is not None and mine:  # shown from the start: the first sample also builds the editors
            progress(0, len(mine))
        with torch_threads(threads):
            bases = ordered_map(self.real_base, [int(sid) for sid in mine], workers)
            with BackgroundWriter() as writer:  # PNG encoding and fsync overlap the next sample's editing
                for done, (sid, base) in enumerate(zip(mine, bases), start=1):
                    base, edited = self.make(int(sid), base)
                    row = sample_row(sid, base, edited.turns)
                    if edited.rejected is None:
                        s = self.schedule.sample(int(sid))
                        read = self._read_sha256(self.real.ref(s.base_ordinal)) if s.base == "real" else {}
                        writer.submit(self.store.write_ok, sid, edited.image, edited.label, row, read)
                    else:
                        log.info("sample %s rejected: %s", sid, edited.rejected)
                        writer.submit(self.store.write_rejected, sid, edited.rejected, row)
                    if progress is not None:
                        progress(done, len(mine))
        made = distributed.gather(len(mine))
        if not distributed.is_main():
            return None
        return self._finish(settings, sum(made or [len(mine)]), ids, len(ids) - len(todo))

    def _finish(self, settings: dict[str, Any], made: int, ids: Sequence[str], reused: int) -> GenerateSummary:
        records = self.store.records(self.store.recorded_ids())
        accepted = self.store.write_manifest(records)
        rejections = [{"id": r["id"], "reason": r["reason"]} for r in records if r["status"] == "rejected"]
        summary = {"settings": settings, "accepted": accepted, "rejected": rejections}
        atomic_write_text(Path(self.config.out) / SUMMARY_FILE, json.dumps(summary, indent=2, sort_keys=True) + "\n")
        beyond = len({r["id"] for r in records} - set(ids))
        return GenerateSummary(Path(self.config.out), accepted, len(rejections), made, reused, self.label_space,
                               rejections, beyond)


def beyond_note(beyond: int, n: int) -> str:
    """The summary's clause for the samples of ids n and above: an earlier run's, kept in the dataset."""
    return f"; {beyond} sample(s) beyond --n {n}, from an earlier run with a larger --n, kept" if beyond else ""


def generate(config: GenerateConfig, progress: Progress | None = None, **components: Any) -> GenerateSummary | None:
    """Run ``diffzoo generate`` from Python (``components``: see :class:`DatasetGenerator`)."""
    return DatasetGenerator(config, **components).run(progress)

