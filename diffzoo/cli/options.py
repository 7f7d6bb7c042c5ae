"""The command line's options: a run's are :class:`RunRequest`'s fields, built here once.

:func:`request_command` gives a command the options of the request fields it names, each
with the field's flag, default and help, and hands the command the values as given; what a
user can get wrong is checked where the request is made (one line naming the option, exit 2),
never twice.  ``--config FILE`` reads the options from a YAML file whose keys are the flag
names; an option given on the command line wins over the file.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any, get_type_hints

import typer

from diffzoo.harness.core.errors import ConfigError, EnvVarError, did_you_mean_each
from diffzoo.harness.core.types import check_seed
from diffzoo.harness.run.request import RunRequest, field_value, flags_of, option_keys, parse_options, typed_value

__all__ = ["CONFIG", "DATASET_OPTION", "FORCE", "KEY_VALUE", "LABELS", "SEED", "WORKERS", "parse_options",
           "request_command", "request_option", "request_values"]

CONFIG = typer.Option(
    None, "--config",
    help="YAML file of options, keys as the flag names without -- (e.g. suite: standard, iterations: 200, "
    "dataset_option: {calib_fraction: 0.05}); an option given on the command line wins over the file.")
COMMAND_DEFAULTS = ("DEFAULT", "DEFAULT_MAP")
"""How click says a parameter was not given on the command line (its ParameterSource names)."""
KEY_VALUE = "KEY=VALUE"
"""The metavar of a command's own repeatable ``KEY=VALUE`` option (read by :func:`parse_options`):
a ``--config`` file may give it a mapping, as it may a run's."""
CONFIG_LIMIT = 1_000_000
"""The most bytes of a ``--config`` file read: its options fill a few kB, and YAML parses at
about 200 kB a second (a mapping of 64 MB took 5 minutes)."""
CONFIG_KEYS = "diffzoo.config_keys"
"""The ``ctx.meta`` key of the option names the ``--config`` file gave."""


def request_option(name: str, callback: Callable[[Any], Any] | None = None, of: type = RunRequest) -> Any:
    """The typer option of :class:`RunRequest` field ``name`` (or of another dataclass ``of`` whose
    fields are declared with ``option``): its flags, default and help (``callback``: a check at
    parse time, for commands that make no request)."""
    f = next(f for f in fields(of) if f.name == name)
    # a repeatable option starts empty; a required one (--detector) may come from --config instead
    default = f.default if f.default is not MISSING else [] if f.default_factory is not MISSING else None
    return typer.Option(default, *flags_of(f), help=f.metadata["help"], callback=callback)


def request_parameters(names: Iterable[str], of: type = RunRequest) -> list[inspect.Parameter]:
    """Typer options of the named :class:`RunRequest` (or ``of``) fields, as a command's parameters."""
    hints = get_type_hints(of)
    texts = {f.name: f.metadata.get("text") for f in fields(of)}  # a field not declared by option() is none
    # an option of no default (a required field, which --config may give instead) takes None too
    return [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=(option := request_option(name, of=of)),
                              annotation=texts[name] or (hints[name] | None if option.default is None else hints[name]))
            for name in names]


def _workers(value: int | None) -> int | None:
    from diffzoo.harness.core.parallel import check_workers

    return None if value is None else check_workers(value)


# the options other commands share with a run (`generate`, `predict`, `data`, `list`): checked as they are parsed
SEED = request_option("seed", lambda value: check_seed(value, "--seed"))
WORKERS = request_option("workers", _workers)
DATASET_OPTION = request_option("dataset_option")
LABELS = request_option("labels")
FORCE = typer.Option(
    False, "--force",
    help="Use an --out folder that is not empty and was not made by diffzoo (its files are never overwritten).")


def request_command(fn: Callable[..., Any], names: Iterable[str], own_first: bool = False,
                    of: type = RunRequest) -> Callable[..., Any]:
    """``fn(ctx, ..., **values)`` as a command: the options of the named request (or ``of``) fields,
    then its own (``own_first``: its own first, where they are what the command is about), then its
    keyword-only ones (after ``*``); the values reach ``fn`` by field name, as typed on the command line."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.kind != p.VAR_KEYWORD]
    context = [p for p in own if p.annotation is typer.Context]
    rest = [p.replace(kind=p.KEYWORD_ONLY) for p in own
            if p.annotation is not typer.Context and p.kind != p.KEYWORD_ONLY]
    request = request_parameters(names, of)
    fn.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        context + (rest + request if own_first else request + rest) + [p for p in own if p.kind == p.KEYWORD_ONLY])
    return fn


def options_elsewhere(ctx: typer.Context, keys: list[str]) -> str:
    """`` (task is an option of diffzoo train)``: which other commands take each of ``keys``, so
    that one file serving two commands names the command a key belongs to."""
    group = ctx.find_root().command
    others = {name: {p.name for p in cmd.params} for name, cmd in getattr(group, "commands", {}).items()
              if cmd is not ctx.command}
    said = [f"{key} is an option of {' and '.join(f'diffzoo {n}' for n in sorted(others) if key in others[n])}"
            for key in keys if any(key in names for names in others.values())]
    return f" ({'; '.join(said)})" if said else ""


def request_values(ctx: typer.Context, own: dict[str, Any], options: dict[str, Any], config: Path | None
                   ) -> dict[str, Any]:
    """The options of a command (``own``: its own, ``options``: those of the request): the
    command line's where given, else the ``--config`` file's, else the default.  A file's value
    of an own option is read as click reads the command line's; the request's are checked by the
    request itself (text such as ``KEY=VALUE`` too)."""
    from diffzoo.harness.run.factories import check_dataset_options

    values = {**options, **own}
    given = {k: v for k, v in values.items() if given_here(ctx, k)}
    from_file = read_config(config) if config is not None else {}
    if "config" in from_file:  # an option of the command itself, which no file gives: files do not chain
        raise ConfigError(f"--config {config}: a --config file cannot name another (config: {from_file['config']}); "
                          "give its options in this one")
    known = {f.name for f in fields(RunRequest)} | set(values)
    if unknown := sorted(set(from_file) - known):
        raise ConfigError(f"--config {config}: unknown option(s) {', '.join(unknown)}; keys are the flag names "
                          f"without -- (e.g. batch_size for --batch-size).{did_you_mean_each(unknown, sorted(known))}"
                          f"{options_elsewhere(ctx, unknown)}")
    params = {p.name: p for p in ctx.command.params}
    # `key: null` (or `key:` alone) is no value: where the option has one by default, neither the default
    # nor "off" can be told from it; where its default is none (None, an empty list), null is the key left out
    nulls = sorted(k for k, v in from_file.items() if v is None and k in values and k not in given)
    if unsure := [k for k in nulls if values[k] not in (None, [], (), {})]:
        defaults = ", ".join(f"{k}: {json.dumps(values[k], default=str)}" for k in unsure)
        raise ConfigError(f"--config {config}: {', '.join(unsure)} given no value (null); give one, or leave the key "
                          f"out for the default ({defaults})")
    from_file = {k: v for k, v in from_file.items() if k not in nulls}
    for name, value in from_file.items():  # "" is no value, named as the file's (a path: pathlib reads "" as ".")
        path_valued = name in params and takes_path(params[name].type_descriptor.annotation)
        each = value if isinstance(value, list) else [*value, *value.values()] if isinstance(value, dict) else [value]
        if any(isinstance(v, str) and not (v if path_valued else v.strip()) for v in each):
            what = "an empty path; give one (. for the current folder)" if path_valued else \
                f"an empty value ({value!r}); give one"
            raise ConfigError(f"--config {config}: {name} is given {what} or leave the key out")
        if path_valued:  # `out: ~/runs/x` is under the home folder, as the shell would read it
            from_file[name] = [_home(v) for v in value] if isinstance(value, list) else _home(value)
    try:  # every refusal of a value the file gives names the file
        for name in set(from_file) & set(own):
            from_file[name] = _cast(ctx, name, from_file[name])
        # read and checked again by the request, whose refusal would not name the file; the adapter's too
        read = {f.name: field_value(f, from_file[f.name]) for f in fields(RunRequest)
                if f.name in from_file and f.name in options}
        if "dataset_option" in read.keys() - given.keys() and "dataset" in values:  # a key the adapter does not take
            check_dataset_options(str({**values, **from_file, **given}["dataset"]), read["dataset_option"])
    except EnvVarError:  # a check compared the file's value with the environment's: the variable is bad
        raise
    except ConfigError as exc:
        raise ConfigError(f"--config {config}: {exc}") from None
    ctx.meta[CONFIG_KEYS] = frozenset(from_file)  # what was_given() reads: the file is read once
    return {**values, **from_file, **given}


def _home(value: Any) -> Any:
    """A path written ``~/...`` in a ``--config`` file, under the home folder; anything else as it is."""
    return os.path.expanduser(value) if isinstance(value, str) else value


def _cast(ctx: typer.Context, name: str, value: Any) -> Any:
    """A ``--config`` file's value of the command's own option ``name`` as the command line's:
    of the option's kind as a request field's value is (:func:`typed_value`: one text where a
    repeatable option takes a list is a list of it, a list where it takes text is that text, never
    true or false for a number; a mapping where a :data:`KEY_VALUE` option is), then checked as click
    checks the command line's (a range); a ConfigError for a value of another kind or one click would
    not take."""
    param = next(p for p in ctx.command.params if p.name == name)
    try:
        if param.metavar == KEY_VALUE and isinstance(value, Mapping):  # parse_options keeps a mapping
            return typed_value(param.opts[0], value, dict[str, Any])
        value = typed_value(param.opts[0], value, param.type_descriptor.annotation)
        return param.process_value(ctx, value)
    except (typer.TyperException, TypeError, ValueError) as exc:
        why = exc.format_message() if isinstance(exc, typer.BadParameter) else str(exc)
        raise ConfigError(f"{why} (got {value!r})") from None


def given_here(ctx: typer.Context, name: str) -> bool:
    """Whether parameter ``name`` of the command was given on the command line or by the
    environment, not left at its default."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in COMMAND_DEFAULTS


def was_given(ctx: typer.Context, name: str) -> bool:
    """Whether option ``name`` was given at all: on the command line, by the environment, or in
    the ``--config`` file :func:`request_values` read."""
    return given_here(ctx, name) or name in ctx.meta.get(CONFIG_KEYS, ())


def takes_path(annotation: Any) -> bool:
    """Whether a parameter annotated ``annotation`` (a type, or its text under postponed
    annotations) takes a path: ``Path``, ``Path | None``, ``list[Path]``."""
    return "Path" in (annotation if isinstance(annotation, str) else repr(annotation))


def read_config(path: Path) -> dict[str, Any]:
    """The options in a ``--config`` YAML file: a mapping of flag names (``-`` or ``_``) to values."""
    import yaml

    from diffzoo.harness.core.fsutil import FileRefused, read_text, read_yaml
    from diffzoo.harness.records.fields import json_kind

    try:
        data = read_yaml(read_text(path, CONFIG_LIMIT), str(path))
    except FileRefused as exc:
        raise ConfigError(f"--config {exc}") from None
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--config {path}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: not YAML ({exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: must be a mapping of option names to values (key: value lines), "
                          f"not {json_kind(data)}")
    return option_keys(data, f"--config {path}")
