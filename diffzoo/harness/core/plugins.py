"""The plugin manager: in-tree DEFAULT_PLUGINS and the ``diffzoo`` entry-point
group are loaded by the same code; failures are reported by name and skipped.

``DIFFZOO_PLUGINS`` restricts which entry-point plugins load: a comma-separated
list of entry-point names (empty string: none).  In-tree plugins always load.
"""

from __future__ import annotations

import importlib
import logging
import os
import traceback
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from typing import Any

import pluggy

from diffzoo.harness.core import hookspecs
from diffzoo.harness.core.errors import DiffzooError
from diffzoo.harness.core.registry import Registry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "diffzoo"
ENV_VAR = "DIFFZOO_PLUGINS"
DEFAULT_PLUGINS: tuple[str, ...] = (
    "diffzoo.harness.builtins",
    "diffzoo.plugins.segformer",
    "diffzoo.plugins.deeplabv3plus",
    "diffzoo.plugins.fcn8s",
    "diffzoo.plugins.cnnspot",
    "diffzoo.plugins.universalfakedet",
    "diffzoo.plugins.mmseg",
    "diffzoo.plugins.benco",
    "diffzoo.plugins.opensdi",
    "diffzoo.plugins.dinov3iml",
    "diffzoo.generators.plugin",
)

REGISTER_HOOKS = {
    "register_detectors": "detector",
    "register_generators": "generator",
    "register_datasets": "dataset",
    "register_suites": "suite",
    "register_distortions": "distortion",
}


@dataclass
class PluginFailure:
    plugin: str
    stage: str  # "import", "hooks", "select" (named in $DIFFZOO_PLUGINS, not installed) or the hook name
    message: str
    traceback: str = ""  # shown by the CLI with --debug

    def __str__(self) -> str:
        if self.stage == "select":
            return f"plugin {self.plugin!r} {self.message}"
        if self.stage == "register_commands":  # its registrations stay: only what the hook adds is dropped
            return f"plugin {self.plugin!r} register_commands: {self.message}; none of its commands is added"
        where = {"import": "failed to import", "hooks": "was not loaded"}.get(self.stage, f"raised in {self.stage}")
        return f"plugin {self.plugin!r} {where}: {self.message}; the whole plugin is skipped"


@dataclass
class PluginInfo:
    name: str
    version: str
    hooks: list[str]
    builtin: bool


class PluginSystem:
    """Holds the pluggy manager, the registry built from it, and failures."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("diffzoo")
        self.pm.add_hookspecs(hookspecs)
        self.failures: list[PluginFailure] = []
        self.versions: dict[str, str] = {}
        self.builtin: set[str] = set()
        self._registry: Registry | None = None

    # -- loading ---------------------------------------------------------
    def _fail(self, name: str, stage: str, exc: BaseException) -> None:
        failure = PluginFailure(name, stage, f"{type(exc).__name__}: {exc}",
                                "".join(traceback.format_exception(exc)))
        self.failures.append(failure)
        log.warning("%s", failure)

    def _register_module(self, name: str, loader: Any, version: str, builtin: bool) -> None:
        try:
            self.pm.register(loader(), name=name)
        except (Exception, SystemExit) as exc:  # a plugin's sys.exit() at import must not end diffzoo
            self._fail(name, "import", exc)
            return
        self.versions[name] = version
        if builtin:
            self.builtin.add(name)

    def load(self) -> None:
        from diffzoo.version import __version__

        for module in DEFAULT_PLUGINS:
            self._register_module(module, partial(importlib.import_module, module), __version__, True)
        allowed = os.environ.get(ENV_VAR)
        allow = None if allowed is None else {a.strip() for a in allowed.split(",") if a.strip()}
        installed = metadata.entry_points(group=ENTRY_POINT_GROUP)
        # a misspelt name would load nothing, silently
        for name in sorted((allow or set()) - set(installed.names) - set(DEFAULT_PLUGINS)):
            known = ", ".join(sorted(installed.names)) or "none"
            self.failures.append(PluginFailure(
                name, "select", f"is named in ${ENV_VAR} but not installed (installed entry-point plugins: {known})"))
            log.warning("%s", self.failures[-1])
        for ep in installed:
            if (allow is not None and ep.name not in allow) or self.pm.get_plugin(ep.name) is not None:
                continue
            self._register_module(ep.name, ep.load, ep.dist.version if ep.dist is not None else "?", False)
        self._drop_unknown_hooks()

    def _drop_unknown_hooks(self) -> None:
        """pm.check_pending() would raise for the first misspelled hook and
        stop every command; instead each such plugin is reported and skipped."""
        for name, plugin in list(self.pm.list_name_plugin()):
            if unknown := [h.name for h in self.pm.get_hookcallers(plugin) or [] if not h.has_spec()]:
                self._reject(name, plugin, "hooks", DiffzooError(
                    f"it implements hook(s) diffzoo does not define: {', '.join(sorted(unknown))} "
                    f"(see diffzoo/harness/core/hookspecs.py)"))

    # -- registry --------------------------------------------------------
    @property
    def registry(self) -> Registry:
        if self._registry is None:
            self._registry = self._build_registry()
        return self._registry

    def _build_registry(self) -> Registry:
        """Each plugin's registrations, all of them or none: a plugin whose
        hook raises, or that registers a name already taken (or a second
        default of a family), is rejected whole - none of its entries stay,
        and its other hooks (commands) are not called."""
        registry = Registry()
        for name, plugin in list(self.pm.list_name_plugin()):
            trial = registry.copy()
            calls = [(hook_name, kind, impl) for hook_name, kind in REGISTER_HOOKS.items()
                     for impl in getattr(self.pm.hook, hook_name).get_hookimpls() if impl.plugin is plugin]
            for hook_name, kind, impl in calls:  # a plugin may implement one hook several times (specname)
                try:
                    impl.function(register=partial(trial.add, kind, source=name))
                except (Exception, SystemExit) as exc:
                    self._reject(name, plugin, hook_name, exc)
                    break
            else:
                registry = trial
        return registry

    def _reject(self, name: str, plugin: Any, stage: str, exc: BaseException) -> None:
        """Report ``name`` as failed at ``stage`` and unload it whole."""
        self._fail(name, stage, exc)
        self.pm.unregister(plugin)
        self.versions.pop(name, None)
        self.builtin.discard(name)

    def add_commands(self, cli: Any) -> None:
        """Each plugin's ``register_commands(cli)`` on the typer app ``cli``, all of what it adds
        or none: a hook that raises, or that adds a command or group of a name the app already
        has (``run``: a plugin would silently replace diffzoo's), adds nothing and is reported."""
        self.registry  # noqa: B018 - a plugin rejected while registering gets no commands either
        for impl in self.pm.hook.register_commands.get_hookimpls():
            commands, groups = len(cli.registered_commands), len(cli.registered_groups)
            taken = command_names(cli)
            try:
                impl.function(cli=cli)
                added = command_names(cli, commands, groups)
                if clash := sorted({n for n in added if n in taken or added.count(n) > 1}):
                    raise DiffzooError(f"it adds the command(s) {', '.join(clash)}, which diffzoo already has; "
                                       "add a sub-typer named after the plugin")
            except (Exception, SystemExit) as exc:  # a plugin's sys.exit() must not end diffzoo
                del cli.registered_commands[commands:], cli.registered_groups[groups:]
                self._fail(impl.plugin_name, "register_commands", exc)

    def info(self) -> list[PluginInfo]:
        out = []
        for name, plugin in self.pm.list_name_plugin():
            hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
            out.append(PluginInfo(name, self.versions.get(name, "?"), hooks, name in self.builtin))
        return sorted(out, key=lambda p: (not p.builtin, p.name))


def command_names(cli: Any, commands: int = 0, groups: int = 0) -> list[str]:
    """The names of the typer app ``cli``'s commands and groups (from the ``commands``-th and
    ``groups``-th on), as its command line spells them."""
    names = [info.name or info.callback.__name__.replace("_", "-") for info in cli.registered_commands[commands:]
             if info.callback is not None or info.name]
    names += [info.name or info.typer_instance.info.name for info in cli.registered_groups[groups:]
              if info.name or info.typer_instance is not None]
    return [str(n) for n in names if n]


_SYSTEM: PluginSystem | None = None


def get_plugin_system() -> PluginSystem:
    """The process-wide plugin system, loaded on first use."""
    global _SYSTEM
    if _SYSTEM is None:
        system = PluginSystem()
        system.load()
        _SYSTEM = system
    return _SYSTEM


def get_registry() -> Registry:
    return get_plugin_system().registry


def reset_plugins() -> None:
    """Forget the loaded plugins (tests use this after installing a package)."""
    global _SYSTEM
    _SYSTEM = None
