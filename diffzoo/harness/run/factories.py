"""The public factories: build detectors, generators and datasets by name.

They go through the plugin registry, so third-party plugins work the same way
as the in-tree ones.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import re
import typing
import zipfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import (
    ConfigError,
    DataError,
    PluginError,
    UnknownNameError,
    did_you_mean,
    name_some,
    no_value,
    not_found,
    plugin_code,
)
from diffzoo.harness.core.fsutil import file_kind
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import Progress, counter_callback
from diffzoo.harness.core.protocols import (
    Dataset,
    Detector,
    DetectorBuild,
    Generator,
    build_detector,
    checked_dataset,
    takes_keyword_form,
)
from diffzoo.harness.core.registry import Entry
from diffzoo.harness.core.types import BINARY, LabelSpace, check_seed
from diffzoo.harness.data.hfsource import is_hub_id
from diffzoo.harness.data.walk import is_folder
from diffzoo.harness.run.request import OWN_FLAGS, typed_value

log = logging.getLogger(__name__)


def create_detector(
    name: str, task: str = "binary", label_space: LabelSpace | None = None, pretrained: bool = False
) -> Detector:
    """Build detector ``name`` (``family`` or ``family.tag``) for ``task``: its registered
    factory called with a :class:`DetectorBuild`."""
    entry = get_registry().get("detector", name)
    factory = entry.load()
    build = DetectorBuild(entry.card, task, label_space or BINARY, pretrained)
    if not takes_keyword_form(factory) and (wrong := _not_callable_with(factory, build)) is not None:
        raise PluginError(f"detector {entry.name!r} from plugin {entry.source!r} has a factory that does not "
                          f"take a DetectorBuild, factory(build): {wrong}")
    with plugin_code(what := f"detector {entry.name!r} from plugin {entry.source!r}: its factory"):
        return build_detector(factory, build, what)


def _not_callable_with(factory: Any, build: DetectorBuild) -> str | None:
    """Why ``factory(build)`` cannot be called (its signature), None where it can or none is known."""
    try:
        inspect.signature(factory).bind(build)
    except TypeError as exc:
        return str(exc)
    except ValueError:  # no signature to read (a C callable)
        pass
    return None


def create_generator(name: str, **options: Any) -> Generator:
    entry = get_registry().get("generator", name)
    return entry.load()(entry.card, **options)


def _looks_like_path(spec: str) -> bool:
    return "/" in spec or "\\" in spec or spec.startswith(".") or Path(spec).suffix != ""


_NOT_OPTIONS = ("self", "progress")


def option_names(factory: Any) -> list[str] | None:
    """The keyword options a dataset factory takes, sorted; None when it takes
    any (``**options``) without saying which.  A factory that forwards its
    options may declare them as ``factory.dataset_options`` (a list, or a
    function returning one)."""
    declared = getattr(factory, "dataset_options", None)
    if declared is not None:
        return sorted(declared() if callable(declared) else declared)
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return sorted(p.name for p in params if p.name not in _NOT_OPTIONS
                  and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))


def sniffing_adapters() -> list[tuple[Entry, Any]]:
    """(entry, adapter) of every registered dataset adapter with a ``sniff(path)``, in name
    order: the order ``--dataset PATH`` asks them in; one that fails to load is warned about
    and left out."""
    out = []
    for entry in get_registry().list("dataset"):
        try:
            adapter = entry.load()
        except PluginError as exc:
            log.warning("%s", exc)
            continue
        if getattr(adapter, "sniff", None) is not None:
            out.append((entry, adapter))
    return out


def recognise(target: Path | str, adapters: list[tuple[Entry, Any]],
              tolerate: tuple[type[BaseException], ...] = (),
              crashed: list[str] | None = None) -> tuple[Entry, Any] | None:
    """The first of ``adapters`` whose ``sniff`` takes ``target``, or None; a sniffer raising one
    of ``tolerate`` recognises nothing (logged).  A sniffer's DataError (its layout, wrong in a
    way it names) is raised when no other adapter takes ``target``.  With ``crashed``, a sniffer
    raising anything else (a plugin's bug) recognises nothing either: it is warned about, named in
    ``crashed`` and the other adapters are still asked; without, that error propagates."""
    refusal = None
    for entry, adapter in adapters:
        try:
            if adapter.sniff(target):
                return entry, adapter
        except tolerate as exc:
            log.info("%s: adapter %s could not look at it (%s)", target, entry.name, exc)
        except DataError as exc:
            refusal = refusal or exc
        except Exception as exc:
            if crashed is None:
                raise
            log.warning("%s: dataset adapter %s failed to look at it: %s: %s", target, entry.name,
                        type(exc).__name__, exc)
            crashed.append(f"dataset adapter {entry.name} failed to look at it ({type(exc).__name__}: {exc})")
    if refusal is not None:
        raise refusal
    return None


def open_recognised(found: tuple[Entry, Any], target: Path | str, options: dict[str, Any],
                    flag: str = "--dataset-option") -> Dataset:
    """Open ``target`` with the adapter :func:`recognise` found for it (``options`` given by ``flag``);
    where that adapter refuses it (a DataError), the error names another adapter whose sniff takes
    ``target`` and how to open it with that one."""
    entry, adapter = found
    log.info("dataset %s: recognised as %s", target, entry.name)
    try:
        return _call_adapter(adapter, adapter_for(entry, target), options, flag, entry.source, path=target)
    except DataError as exc:
        others = [(e, a) for e, a in sniffing_adapters() if e.name != entry.name]
        if (other := recognise(target, others, tolerate=(Exception,))) is not None:
            exc.args = (f"{exc} (dataset adapter {other[0].name} recognises it too: {flag.removesuffix('-option')} "
                        f"{other[0].name} {flag} path={target})",)
        raise


def adapter_for(entry: Entry, target: Path | str) -> str:
    """How an option's refusal names the adapter :func:`recognise` found for ``target``."""
    return f"dataset adapter {entry.name!r} (for {target})"


def _call_adapter(factory: Any, what: str, options: dict[str, Any], flag: str, source: str, **fixed: Any) -> Dataset:
    """Call a dataset factory with ``options`` checked by :func:`adapter_options`; what it raises
    is reported as :func:`plugin_code` says, naming ``what`` and its plugin ``source``."""
    options = adapter_options(factory, what, options, flag, fixed)
    with plugin_code(f"{what} from plugin {source!r}: its factory"):
        dataset = factory(**fixed, **options)
    if source.startswith("diffzoo."):  # the package's own adapters are tested; opening one hashes no file early
        return dataset
    return checked_dataset(dataset, f"{what} from plugin {source!r}")


def adapter_options(factory: Any, what: str, options: dict[str, Any], flag: str,
                    fixed: Collection[str] = ()) -> dict[str, Any]:
    """``options`` of a dataset factory as it is called (``fixed``: the arguments it is given
    besides), read by :func:`typed_options`; an option it does not take is a ConfigError
    that names the closest valid option and lists them all (``flag``: the
    command-line option the options came from)."""
    if "path" in fixed and "path" in options:  # a second path would reach the factory as a TypeError
        raise ConfigError(f"{what} reads the path given as the dataset: drop {flag} path")
    valid = option_names(factory)
    if valid is None:  # the factory takes **kwargs: every option
        return options
    valid = [k for k in valid if k not in fixed]  # the path given as the dataset is no option left to pass
    unknown = sorted(k for k in options if k not in valid)
    if unknown:
        hint = did_you_mean(unknown[0], valid)
        # --labels and --extra-authentic reach the adapter as these keys: the error names what the user typed
        named = [OWN_FLAGS[k] if flag == "--dataset-option" and k in OWN_FLAGS else f"{flag} {k}" for k in unknown]
        raise ConfigError(f"{what} does not take {', '.join(named)}.{hint} "
                          f"Valid options: {', '.join(valid) or '(none)'}")
    empty = sorted(k for k, v in options.items() if isinstance(v, str) and not v.strip())
    if empty:  # KEY=$VAR with VAR unset: pathlib reads "" as the current folder, a split "" holds everything
        own = flag == "--dataset-option" and empty[0] in OWN_FLAGS
        shown = f"{OWN_FLAGS[empty[0]]} {options[empty[0]]!r}" if own else f"{flag} {empty[0]}="
        raise no_value(shown)
    return typed_options(factory, options, flag)


def check_dataset_options(spec: str, options: dict[str, Any]) -> None:
    """:func:`adapter_options` of the adapter that would open ``spec`` (a registered name, or a
    path an adapter recognises), without opening it; a dataset not found or not recognised is
    left to the run that opens it."""
    path = Path(os.path.expanduser(spec))
    if get_registry().has("dataset", spec) and not os.path.lexists(spec):
        entry = get_registry().get("dataset", spec)
        adapter_options(entry.load(), f"dataset {entry.name!r}", options, "--dataset-option")
    elif path.exists() and (found := recognise(path, sniffing_adapters(), crashed=[])) is not None:
        adapter_options(found[1], adapter_for(found[0], path), options, "--dataset-option", ("path",))


def typed_options(factory: Any, options: dict[str, Any], flag: str = "--dataset-option") -> dict[str, Any]:
    """``options`` of a dataset factory, each read into the type its parameter declares
    (:func:`~diffzoo.harness.run.request.typed_value`: ``calib_fraction=abc`` is one line naming
    ``flag``, never a TypeError inside the adapter).  An option whose parameter has no annotation
    it knows, or a factory whose annotations cannot be resolved (a name only a type checker
    imports), is taken as given.  ``split_seed`` is one of ``--seed``'s seeds for every adapter,
    also one that splits by no hash this time.  A factory that forwards its options
    (``dataset_options``) checks them where it forwards them, with this function."""
    try:
        hints = typing.get_type_hints(factory.__init__ if isinstance(factory, type) else factory)  # type: ignore[misc]
    except Exception:  # noqa: BLE001 - annotations are a help here, never a reason to refuse a dataset
        hints = {}
    typed = {k: typed_value(f"{flag} {k}", v, hints[k]) if k in hints else v for k, v in options.items()}
    if "split_seed" in typed:
        check_seed(typed["split_seed"], "split_seed")
    return typed


RUN_SPLITS = "PATH:SPLIT is --eval-dataset's spelling; the suite chooses the splits a run reads"
"""What a dataset given as ``PATH:SPLIT`` is told where a run opens it."""


def open_dataset(spec: str | os.PathLike[str], progress: Progress | None = None, **options: Any) -> Dataset:
    """A registered dataset name, or a path whose layout an adapter recognises.

    A factory that takes ``progress`` (builders such as ``mini``) reports
    through ``progress`` while it builds.  For a path, every registered
    adapter with a ``sniff(path)`` is asked in name order; a hub id (e.g.
    ``Chaos2629/Diffseg30k``) is offered to them too.
    """
    return open_dataset_with(spec, progress, options)


def open_dataset_with(spec: str | os.PathLike[str], progress: Progress | None, options: dict[str, Any],
                      flag: str = "--dataset-option", splits: str = RUN_SPLITS) -> Dataset:
    """:func:`open_dataset`, with ``options`` given by the command-line option ``flag``
    (``--eval-dataset-option`` for an evaluation dataset), which an error names; ``splits``:
    how the calling command reads one split, said to ``PATH:SPLIT`` (``{head}``, ``{split}``)."""
    spec = os.fspath(spec)  # a Path is its text: a registered name or a path
    if not spec.strip():  # Path("") is the current folder: an unset variable must not select it
        raise ConfigError("the dataset is given as an empty string: give a registered name "
                          "(diffzoo list datasets) or a path (. for the current folder)")
    registry = get_registry()
    if registry.has("dataset", spec) and not os.path.lexists(spec):
        entry = registry.get("dataset", spec)
        factory = entry.load()
        what = f"dataset {entry.name!r}"
        needs = inspect.signature(factory).parameters.get("path")
        if needs is not None and needs.default is needs.empty and "path" not in options:  # an adapter, not a builder
            raise ConfigError(f"{what} reads files on disk, which diffzoo does not download: give their folder "
                              f"or file instead of the name (e.g. --dataset /data/{entry.name}); docs/datasets.md "
                              "describes the layout it reads and where to get the data")
        if progress is not None and "progress" in inspect.signature(factory).parameters:
            with counter_callback(progress, f"building dataset {spec}") as callback:
                return _call_adapter(factory, what, options, flag, entry.source, progress=callback)
        return _call_adapter(factory, what, options, flag, entry.source)
    path = Path(os.path.expanduser(spec))
    if os.path.islink(path) and not path.exists():  # a link loop or a dangling link: never "does not exist"
        raise not_found(DataError(f"dataset path {spec} is {file_kind(path)}; pass the folder or file it should "
                                  "point at"))
    kind = None if not path.exists() or path.is_dir() else file_kind(path)
    if kind is not None:  # a FIFO, a device: never sniffed
        raise not_found(DataError(f"dataset path {spec} is {kind}, not a dataset folder or file"))
    if not path.exists() and not is_hub_id(spec):
        head, colon, split = spec.rpartition(":")
        if colon and head and os.path.lexists(os.path.expanduser(head)):  # `tpgt:test` is not the name tpgt misspelt
            raise not_found(DataError(f"dataset path {spec} does not exist; {head} does, but a dataset is given "
                                      f"without :{split} ({splits.format(head=head, split=split)})"))
        if _looks_like_path(spec):
            hub = re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", spec) is not None
            raise not_found(DataError(f"dataset path {spec} does not exist" + (
                f" (a Hugging Face dataset id? diffzoo reads a local copy: hf download {spec} "
                "--repo-type dataset --local-dir DIR, then pass DIR)" if hub else "")))
        raise UnknownNameError("dataset", spec, [e.name for e in registry.list("dataset")])
    target = path if path.exists() else spec
    adapters = sniffing_adapters()
    crashed: list[str] = []  # a plugin's sniffer that fails is warned about; the others are still asked
    found = recognise(target, adapters, crashed=crashed)
    if found is not None:
        return open_recognised(found, target, options, flag)
    empty = path.is_dir() and next(path.iterdir(), None) is None
    raise not_found(DataError(
        f"{target}: no dataset adapter recognises this layout{' (the folder is empty)' if empty else ''}"
        f"{folder_note(path, adapters)}. Adapters: {', '.join(entry.name for entry, _ in adapters)}; `diffzoo list "
        "datasets` says the layout each expects (docs/datasets.md)" + "".join(f"; {c}" for c in crashed)
    ))


_ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".7z", ".rar")
_FOLDER_NAMED = re.compile(r"(?:^|[\s(])([\w.-]+)/")
"""A folder an adapter's description names: ``Tp/`` in "a folder with Tp/ (images)"."""


def folder_note(path: Path, adapters: list[tuple[Entry, Any]]) -> str:
    """`` (it holds archives: ...)`` for a folder whose files include downloads not yet extracted:
    no adapter looks inside a .tar or .7z (a .zip only where its adapter reads it in place), nor
    in ``path`` itself being one; and `` (Tp is a file where tpgt expects a folder)`` for a file
    (or a link loop, a dangling link, a FIFO) named as a folder the description of one of
    ``adapters`` names, which no sniffer looks into."""
    try:
        others = sorted((p.name, file_kind(p) or "a file") for p in path.iterdir() if not is_folder(p))
    except OSError:  # not a folder, or one that cannot be listed: an archive is said so, else nothing to add
        if not (path.name.lower().endswith(_ARCHIVE_SUFFIXES) and path.is_file()):
            return ""
        with contextlib.suppress(OSError, zipfile.BadZipFile), zipfile.ZipFile(path) as zf:
            if not zf.namelist():  # extracting it gives nothing to give
                return " (the archive is empty)"
        return " (an archive no adapter reads packed: extract it and give its folder)"
    names = [n for n, kind in others if kind == "a file" and n.lower().endswith(_ARCHIVE_SUFFIXES)]
    note = f" (it holds archives not extracted: {name_some(names)}; extract them first)" if names else ""
    expected = [(e.name, {f.lower() for f in _FOLDER_NAMED.findall(e.description)}) for e, _ in adapters]
    for name, kind in others:
        readers = [adapter for adapter, folders in expected if name.lower() in folders]
        if readers:
            note += f" ({name} is {kind} where {', '.join(readers)} expect{'s' * (len(readers) == 1)} a folder)"
    return note
