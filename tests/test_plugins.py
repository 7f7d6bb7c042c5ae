"""The plugin manager: in-tree plugins, test plugins registered in-process,
failures reported by name and skipped."""

import subprocess
import sys

from diffzoo import hookimpl
from diffzoo.harness.core.plugins import DEFAULT_PLUGINS, PluginSystem


def loaded():
    system = PluginSystem()
    system.load()
    return system


def test_default_plugins_register_segformer_standard_and_editors():
    system = loaded()
    reg = system.registry
    assert not system.failures, [str(f) for f in system.failures]
    assert reg.resolve("detector", "segformer") == "segformer.b2"
    assert reg.has("suite", "standard")
    assert reg.has("dataset", "mini") and reg.has("dataset", "diffseg30k")
    assert {"sd2", "sdxl", "flux1"} <= {e.family for e in reg.list("generator")}
    names = {p.name for p in system.info()}
    assert set(DEFAULT_PLUGINS) <= names


def test_a_registered_test_plugin_adds_a_detector():
    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            register("mine.v1", "json:dumps", default=True, description="test")

    system = loaded()
    system.pm.register(Plugin(), name="mine-plugin")
    try:
        entry = system.registry.get("detector", "mine")
        assert entry.name == "mine.v1" and entry.source == "mine-plugin"
        assert "register_detectors" in next(p for p in system.info() if p.name == "mine-plugin").hooks
    finally:
        system.pm.unregister(name="mine-plugin")


def test_a_plugin_that_raises_is_reported_and_skipped():
    class Broken:
        @hookimpl
        def register_detectors(self, register):
            register("broken.a", "json:dumps")
            raise RuntimeError("boom")

    system = loaded()
    system.pm.register(Broken(), name="broken-plugin")
    reg = system.registry
    assert reg.has("detector", "segformer")  # the rest still works
    [failure] = system.failures
    assert failure.plugin == "broken-plugin" and "boom" in str(failure)
    assert "register_detectors" in str(failure) and "skipped" in str(failure)


def test_duplicate_registration_is_a_named_failure():
    class Dup:
        @hookimpl
        def register_suites(self, register):
            register("standard", "json:dumps")

    system = loaded()
    system.pm.register(Dup(), name="dup-plugin")
    _ = system.registry  # building the registry is what reports the duplicate
    assert any("registered twice" in f.message and "dup-plugin" in f.message for f in system.failures)


def test_misspelled_hook_is_reported_and_the_plugin_skipped():
    class Typo:
        @hookimpl
        def register_detectorz(self, register):
            pass

        @hookimpl
        def register_suites(self, register):
            register("typo-suite", "json:dumps")

    system = loaded()
    system._register_module("typo", Typo, "1.0", False)
    system._drop_unknown_hooks()
    [failure] = system.failures
    assert failure.plugin == "typo" and "register_detectorz" in failure.message
    assert "was not loaded" in str(failure) and "skipped" in str(failure)
    assert system.pm.get_plugin("typo") is None and not system.registry.has("suite", "typo-suite")
    assert system.registry.has("detector", "segformer")  # everything else still loads


def test_listing_imports_no_torch():
    code = (
        "import sys; from diffzoo.harness.core.plugins import get_registry; r = get_registry();"
        "[e for k in ('detector','generator','dataset','suite') for e in r.list(k)];"
        "assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
