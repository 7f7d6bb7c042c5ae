"""The package's shape (docs/architecture.md), checked from the source itself.

Every ``import`` and ``from ... import`` in ``diffzoo/`` is read with ``ast``,
deferred ones inside functions included, and resolved to the module it
loads.  The test fails on an import cycle, on an import that runs against
the floors (harness never imports leaderboard, cli, generators or plugins;
inside the harness a package imports only its own floor or lower), on a
value taken from a parent package's ``__init__``, and on an in-tree plugin
that reaches past the public authoring surface (``diffzoo.plugin``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "diffzoo"

HARNESS_FLOORS = {"core": 0, "data": 1, "metrics": 1, "suites": 2, "models": 2, "records": 3, "run": 4,
                  "builtins": 5}
"""Floors inside diffzoo.harness (docs/architecture.md): a module imports its own floor or lower."""

FORBIDDEN = {
    "harness": {"api", "cli", "generators", "leaderboard", "plugins"},
    "leaderboard": {"api", "cli", "generators", "plugins"},
    "generators": {"api", "cli", "leaderboard", "plugins"},
    "plugins": {"api", "cli", "generators", "harness", "leaderboard"},
    "plugin": {"api", "cli", "generators", "leaderboard", "plugins"},
    "api": {"cli"},
}
"""Top-level packages each may not import (``diffzoo.<name>``)."""


def module_names() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def imports_of(name: str, path: Path, is_package: bool, known: set[str]) -> set[str]:
    """Modules ``name`` loads (deferred imports too); ``from pkg import sub`` counts as ``pkg.sub``."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "diffzoo"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            if base.split(".")[0] != "diffzoo":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = module_names()
    known = set(modules)
    return {name: imports_of(name, path, pkg, known) for name, (path, pkg) in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def violations(graph: dict[str, set[str]]) -> list[str]:
    modules = module_names()
    out = []
    for name, targets in sorted(graph.items()):
        parts = name.split(".")
        top = parts[1] if len(parts) > 1 else ""
        for target in sorted(targets):
            tparts = target.split(".")
            ttop = tparts[1] if len(tparts) > 1 else ""
            if modules[target][1] and name.startswith(target + "."):
                out.append(f"{name} imports a value from its parent package's __init__ ({target})")
            if ttop in FORBIDDEN.get(top, ()) or (target == "diffzoo" and top in FORBIDDEN):
                out.append(f"{name} imports {target}: {top} must not import {ttop or 'the package root'}")
            if top == ttop == "harness" and len(parts) > 2 and len(tparts) > 2:
                here, there = HARNESS_FLOORS.get(parts[2]), HARNESS_FLOORS.get(tparts[2])
                if here is not None and there is not None and there > here:
                    out.append(f"{name} (floor {here}) imports {target} (floor {there}): an upward import")
    return out


def surface_violations(graph: dict[str, set[str]]) -> list[str]:
    """In-tree plugins import diffzoo only through ``diffzoo.plugin`` (and the modules of
    ``diffzoo.plugins``): whatever they do, a third-party package can do the same."""
    return [f"{name} imports {target}: a plugin imports only diffzoo.plugin"
            for name, targets in sorted(graph.items()) if name.startswith("diffzoo.plugins.")
            for target in sorted(targets) if target != "diffzoo.plugin" and not target.startswith("diffzoo.plugins.")]


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_imports_run_one_way(graph):
    assert violations(graph) == []


def test_plugins_use_the_public_surface_only(graph):
    assert surface_violations(graph) == []
    assert graph["diffzoo.plugins.segformer.model"] == {"diffzoo.plugin"}  # the check reads real imports


def test_the_surface_check_sees_a_plugin_importing_the_harness():
    toy = {"diffzoo.plugins.benco.model": {"diffzoo.plugin", "diffzoo.plugins.benco.specs",
                                           "diffzoo.harness.models.weights"},
           "diffzoo.plugins.cnnspot": {"diffzoo"}, "diffzoo.harness.run.runner": {"diffzoo.harness.models.trainer"}}
    assert surface_violations(toy) == [
        "diffzoo.plugins.benco.model imports diffzoo.harness.models.weights: a plugin imports only diffzoo.plugin",
        "diffzoo.plugins.cnnspot imports diffzoo: a plugin imports only diffzoo.plugin"]
    assert any("plugins must not import harness" in v for v in violations(toy))


def test_the_checker_sees_cycles_and_upward_imports():
    """The two checks fail on the shapes they exist for (a test that cannot fail proves nothing)."""
    toy = {"diffzoo.a": {"diffzoo.b"}, "diffzoo.b": {"diffzoo.c"}, "diffzoo.c": {"diffzoo.a"}, "diffzoo.d": set()}
    assert cycles(toy) == [["diffzoo.a", "diffzoo.b", "diffzoo.c"]]
    real = module_names()
    upward = {"diffzoo.harness.core.errors": {"diffzoo.harness.run.runner"},
              "diffzoo.harness.run.runner": {"diffzoo.leaderboard.store"},
              "diffzoo.harness.suites.paper": {"diffzoo.harness.suites"}}
    assert set(real) >= set(upward) | {"diffzoo.leaderboard.store", "diffzoo.harness.suites"}
    found = violations(upward)
    assert any("floor 0" in v and "upward" in v for v in found)
    assert any("harness must not import leaderboard" in v for v in found)
    assert any("parent package's __init__" in v for v in found)


def test_deferred_imports_count(tmp_path):
    """An import inside a function is an edge like any other."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from diffzoo.harness.run import runner\n    return runner\n")
    assert imports_of("diffzoo.harness.core.x", module, False, {"diffzoo.harness.run.runner"}) == {
        "diffzoo.harness.run.runner"}


def module_concept(path: Path) -> str | None:
    """The first sentence of a module's docstring: the one concept the module holds."""
    doc = ast.get_docstring(ast.parse(path.read_text()))
    return doc.split(".")[0].strip() or None if doc else None


SPLIT_BY_LENGTH = ("_more", "_extra", "_part", "_rest", "_misc", "_utils", "_helpers", "2")
"""Module-name endings that say a module was split off another for its length, not for a concept."""


def test_each_module_says_the_one_concept_it_holds():
    """A module holds one concept, named by its name and by the first sentence of its docstring
    (docs/architecture.md, "Modules"); how long it is does not matter.  A package's ``__init__``
    may be empty; a module split off another for length has a name that says so and fails."""
    missing, split = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__init__.py" and not path.read_text().strip():
            continue
        if module_concept(path) is None:
            missing.append(str(path.relative_to(ROOT)))
        if path.stem.endswith(SPLIT_BY_LENGTH):
            split.append(str(path.relative_to(ROOT)))
    assert missing == [] and split == []


def test_the_concept_rule_fails_without_a_docstring_or_on_a_split_name(tmp_path):
    plain = tmp_path / "m.py"
    plain.write_text("x = 1\n")
    assert module_concept(plain) is None
    plain.write_text('"""Boundary F1 per image. More here."""\n')
    assert module_concept(plain) == "Boundary F1 per image"
    assert "state_more".endswith(SPLIT_BY_LENGTH) and not "state".endswith(SPLIT_BY_LENGTH)


@pytest.mark.parametrize("package", ["diffzoo", "diffzoo.plugin", "diffzoo.harness.data", "diffzoo.harness.metrics"])
def test_lazy_exports_resolve_to_what_they_name(package):
    """A package that exports names lazily (harness/core/lazy.py) gives each name of its
    ``__all__``, also once every submodule is loaded: a name that is also a submodule's
    would then read as the module."""
    import importlib
    import pkgutil
    import types

    mod = importlib.import_module(package)
    for info in pkgutil.iter_modules(getattr(mod, "__path__", [])):  # diffzoo.plugin is a module
        if package != "diffzoo" or info.name in ("harness",):
            importlib.import_module(f"{package}.{info.name}")
    for name in mod.__all__:
        value = getattr(mod, name)
        assert not isinstance(value, types.ModuleType), f"{package}.{name} reads as a module"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = mod.not_a_name
