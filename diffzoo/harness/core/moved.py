"""Modules that moved, still importable by their old names for a while.

The public surface a plugin may import is ``diffzoo.__all__`` (docs/plugins.md,
"What a plugin may import").  Code written against earlier layouts also
imported modules by path: issue 14's regroup moved 70 of them (the flat
``diffzoo.harness.*``, ``diffzoo.generators.*`` and ``diffzoo.leaderboard.*``
modules into their packages).  Importing an old name gives the module at its
new place, with one :class:`MovedModuleWarning` per old name and process
saying what to import instead; the old names go in diffzoo :data:`REMOVED_IN`
(a changelog line in docs/plugins.md says so).  ``metrics.boundary``, now
``metrics.boundaries``, cannot be aliased (:data:`GONE`).

A meta path finder (installed once, when ``diffzoo`` is imported) answers
only for the names of :data:`MOVED` and :data:`GONE`; every other import is
untouched.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

REMOVED_IN = "0.3.0"


class MovedModuleWarning(FutureWarning):
    """An old module name was imported.  Its own category, so that the CLI, which sends
    third-party deprecation notices to the debug log, still shows this one."""


ROOT_HINT = "the names plugins need are exported by `diffzoo` itself (docs/plugins.md)"

_H, _G, _L = "diffzoo.harness", "diffzoo.generators", "diffzoo.leaderboard"
MOVED: dict[str, str] = {
    # harness: the flat modules before issue 14's regroup (floors core/ data/ metrics/ models/ records/ run/)
    f"{_H}.calibration": f"{_H}.run.thresholds",
    f"{_H}.cards": f"{_H}.core.cards",
    f"{_H}.case_records": f"{_H}.run.case_records",
    f"{_H}.case_summary": f"{_H}.records.case_summary",
    f"{_H}.checkpoints": f"{_H}.models.checkpoints",
    f"{_H}.classifier": f"{_H}.models.classifier",
    f"{_H}.core.conformance": f"{_H}.models.conformance",
    f"{_H}.distortions": f"{_H}.data.distortions",
    f"{_H}.distributed": f"{_H}.core.distributed",
    f"{_H}.errors": f"{_H}.core.errors",
    f"{_H}.evaluate": f"{_H}.run.evaluate",
    f"{_H}.factories": f"{_H}.run.factories",
    f"{_H}.fsutil": f"{_H}.core.fsutil",
    f"{_H}.hookspecs": f"{_H}.core.hookspecs",
    f"{_H}.planning": f"{_H}.run.planning",
    f"{_H}.plugins": f"{_H}.core.plugins",
    f"{_H}.prediction": f"{_H}.run.prediction",
    f"{_H}.progress": f"{_H}.core.progress",
    f"{_H}.protocols": f"{_H}.core.protocols",
    f"{_H}.record_check": f"{_H}.records.check",
    f"{_H}.record_fields": f"{_H}.records.fields",
    f"{_H}.record_model": f"{_H}.records.model",
    f"{_H}.references": f"{_H}.run.references",
    f"{_H}.registry": f"{_H}.core.registry",
    f"{_H}.resume": f"{_H}.models.resume",
    f"{_H}.runner": f"{_H}.run.runner",
    f"{_H}.segmenter": f"{_H}.models.segmenter",
    f"{_H}.trainer": f"{_H}.models.trainer",
    f"{_H}.types": f"{_H}.core.types",
    f"{_H}.weights": f"{_H}.models.weights",
    # harness/data: the dataset adapters got their own package (issue 25)
    **{f"{_H}.data.{m}": f"{_H}.data.adapters.{m}"
       for m in ("casia", "cocoglide", "diffseg30k", "generic", "pape", "pape_files", "pixar")},
    # generators: editors/ tiny/ generate/ datasets/
    f"{_G}.bases": f"{_G}.generate.bases",
    f"{_G}.cards": f"{_G}.editors.cards",
    f"{_G}.coco": f"{_G}.generate.coco",
    f"{_G}.demo": f"{_G}.datasets.mini",
    f"{_G}.diffusers_editor": f"{_G}.editors.diffusers_editor",
    f"{_G}.glide": f"{_G}.editors.glide",
    f"{_G}.glide.cards": f"{_G}.editors.glide.cards",
    f"{_G}.glide.diffusion": f"{_G}.editors.glide.diffusion",
    f"{_G}.glide.editor": f"{_G}.editors.glide.editor",
    f"{_G}.glide.model": f"{_G}.editors.glide.model",
    f"{_G}.glide.tokenizer": f"{_G}.editors.glide.tokenizer",
    f"{_G}.glide.weights": f"{_G}.editors.glide.weights",
    f"{_G}.imgedit": f"{_G}.datasets.imgedit",
    f"{_G}.imgedit_format": f"{_G}.datasets.imgedit_format",
    f"{_G}.instruct": f"{_G}.editors.instruct",
    f"{_G}.instruct_cards": f"{_G}.editors.instruct_cards",
    f"{_G}.labels": f"{_G}.editors.labels",
    f"{_G}.latent_blend": f"{_G}.editors.latent_blend",
    f"{_G}.layout": f"{_G}.generate.layout",
    f"{_G}.lora": f"{_G}.editors.lora",
    f"{_G}.multiturn": f"{_G}.generate.multiturn",
    f"{_G}.openvocab": f"{_G}.generate.openvocab",
    f"{_G}.pairs": f"{_G}.datasets.pairs",
    f"{_G}.pipeline": f"{_G}.generate.pipeline",
    f"{_G}.prompts": f"{_G}.generate.prompts",
    f"{_G}.quality": f"{_G}.generate.quality",
    f"{_G}.reedit": f"{_G}.datasets.reedit",
    f"{_G}.regions": f"{_G}.generate.regions",
    f"{_G}.schedule": f"{_G}.generate.schedule",
    f"{_G}.text2image": f"{_G}.editors.text2image",
    f"{_G}.tiny_extra": f"{_G}.tiny.extra",
    f"{_G}.tiny_instruct": f"{_G}.tiny.instruct",
    f"{_G}.tiny_qwen": f"{_G}.tiny.qwen",
    f"{_G}.vlm": f"{_G}.generate.vlm",
    # leaderboard: render/ and summary/
    f"{_L}.console": f"{_L}.render.console",
    f"{_L}.escape": f"{_L}.render.escape",
    f"{_L}.plots": f"{_L}.render.plots",
    f"{_L}.site": f"{_L}.render.site",
    f"{_L}.stats_plots": f"{_L}.render.stats_plots",
    f"{_L}.summary_tables": f"{_L}.summary.tables",
}
"""Old module name -> where it lives now."""

GONE: dict[str, str] = {
    f"{_H}.metrics.boundary": f"{_H}.metrics.boundaries",
}
"""Old module names that cannot be aliased -> where the module is now.  ``boundary`` is also
the name of the function ``diffzoo.harness.metrics`` exports, and an alias would replace
that function with the module once imported; importing the old name says where to go."""


def moved_message(old: str, new: str) -> str:
    return (f"{old} moved to {new}: import it from there ({ROOT_HINT}); "
            f"the old name will be removed in diffzoo {REMOVED_IN}")


def new_name(old: str) -> str | None:
    """Where module ``old`` lives now: :data:`MOVED`, also for a module inside a moved
    package (``diffzoo.generators.glide.x`` -> ``diffzoo.generators.editors.glide.x``); None
    if it did not move."""
    parts = old.split(".")
    for cut in range(len(parts), 1, -1):
        head = ".".join(parts[:cut])
        if head in MOVED:
            return ".".join([MOVED[head], *parts[cut:]])
    return None


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names (:func:`new_name`) and loads each as the module it moved to.

    It stands first on ``sys.meta_path``: a moved package's old name is the new package
    object, so the path finder would otherwise load its submodules a second time under
    their old names (two copies of every class)."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname in GONE:
            raise ModuleNotFoundError(f"No module named {fullname!r}: it is {GONE[fullname]} now "
                                      f"(the name was also a function's)", name=fullname)
        if new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec) -> ModuleType:
        new = new_name(spec.name)
        module = importlib.import_module(new)
        warnings.warn(moved_message(spec.name, new), MovedModuleWarning, stacklevel=2)
        return module  # the same object: its attributes (and __name__) are the new module's

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new place."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())


def moved_names(package: str, module: str, names: tuple[str, ...]):
    """A ``__getattr__`` for a package that replaced a module of its own name: ``names``
    (the old module's public names) now live in ``module`` (relative to ``package``);
    reading one warns (:class:`MovedModuleWarning`) and returns it."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        new = importlib.import_module(module, package)
        warnings.warn(moved_message(f"{package}.{name}", f"{new.__name__}.{name}"), MovedModuleWarning,
                      stacklevel=2)
        return getattr(new, name)

    return __getattr__
