"""The plugin manager: in-tree plugins, test plugins registered in-process,
failures reported by name and skipped."""

import dataclasses
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from diffzoo import hookimpl
from diffzoo.harness.core.plugins import DEFAULT_PLUGINS, PluginSystem

from helpers.cli import cli, one_line


@contextmanager
def plugged(plugin, name):
    """``plugin`` registered in-process as ``name`` for the block, the registry rebuilt with it and after it."""
    from diffzoo.harness.core.plugins import get_plugin_system

    system = get_plugin_system()
    system.pm.register(plugin, name=name)
    system._registry = None
    try:
        yield
    finally:
        system.pm.unregister(name=name)
        system._registry = None


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
            register("mine.v1", "json:dumps", default=True, description="test", card=SimpleNamespace(name="mine.v1"))

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
            register("broken.a", "json:dumps", card=SimpleNamespace(name="broken.a"))
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


def _app_with_run():
    import typer

    app = typer.Typer()

    @app.command("run")
    def run() -> None:
        """diffzoo's own."""

    return app


def test_a_plugins_commands_are_added_all_or_none():
    """A command of a name the app has (a plugin's `run` replaced diffzoo's, unsaid), or a hook that
    raises after adding some, adds nothing; the plugin's other registrations stay, as its failure says."""
    import typer

    class Replaces:
        @hookimpl
        def register_commands(self, cli):
            cli.add_typer(typer.Typer(), name="run")

    class HalfWay:
        @hookimpl
        def register_detectors(self, register):
            register("halfway.v1", "json:dumps", card=SimpleNamespace(name="halfway.v1"))

        @hookimpl
        def register_commands(self, cli):
            @cli.command("halfway-hello")
            def hello() -> None:
                """Added before the hook raised."""

            raise SystemExit("install halfway[cuda]")  # a plugin's sys.exit() ends no diffzoo command

    system = loaded()
    system.pm.register(Replaces(), name="replaces")
    system.pm.register(HalfWay(), name="halfway")
    app = _app_with_run()
    system.add_commands(app)
    assert [c.name for c in app.registered_commands] == ["run"] and not app.registered_groups
    said = sorted(str(f) for f in system.failures)
    assert said == [
        "plugin 'halfway' register_commands: SystemExit: install halfway[cuda]; none of its commands is added",
        "plugin 'replaces' register_commands: DiffzooError: it adds the command(s) run, which diffzoo already has; "
        "add a sub-typer named after the plugin; none of its commands is added"]
    assert system.registry.has("detector", "halfway.v1")


def test_a_plugin_that_exits_at_import_is_a_failure_not_the_end_of_diffzoo():
    def exits():
        raise SystemExit(3)

    system = PluginSystem()
    system._register_module("exits", exits, "1.0", False)
    [failure] = system.failures
    assert str(failure) == "plugin 'exits' failed to import: SystemExit: 3; the whole plugin is skipped"


def test_a_factory_that_raises_is_the_plugins_error_naming_the_detector():
    import pytest
    import torch

    import diffzoo
    from diffzoo.harness.core.errors import PluginError
    from diffzoo.harness.core.plugins import get_registry

    tiny = get_registry().get("detector", "segformer.tiny").card
    cards = {name: dataclasses.replace(tiny, name=name) for name in ("raises.v1", "inner.v1", "wrong.v1")}

    def raises(build):
        raise RuntimeError("x")

    def inner(build):
        return torch.nn.Conv2d(3, 1, kernel=3)  # a TypeError inside a factory that takes the build

    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            register("raises.v1", raises, card=cards["raises.v1"])
            register("inner.v1", inner, card=cards["inner.v1"])
            register("wrong.v1", lambda build: {"not": "a detector"}, card=cards["wrong.v1"])

    with plugged(Plugin(), "factories"):
        with pytest.raises(PluginError, match=r"^detector 'raises.v1' from plugin 'factories': its factory raised "
                                              r"RuntimeError: x$"):
            diffzoo.create_detector("raises.v1")
        with pytest.raises(PluginError) as err:
            diffzoo.create_detector("inner.v1")
        assert "its factory raised TypeError" in str(err.value) and "does not take a DetectorBuild" not in str(err.value)
        with pytest.raises(PluginError, match=r"^detector 'wrong.v1' from plugin 'factories': its factory returned "
                                              r"dict, not a diffzoo.Detector; it lacks predict, fit, save, load$"):
            diffzoo.create_detector("wrong.v1")


def test_a_dataset_factory_that_raises_is_the_plugins_error_naming_the_dataset():
    import pytest

    import diffzoo
    from diffzoo.harness.core.errors import PluginError

    def raises(path=None):
        raise RuntimeError("no header")

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            register("raising.ds", raises)

    with plugged(Plugin(), "datasets"):
        with pytest.raises(PluginError, match=r"^dataset 'raising.ds' from plugin 'datasets': its factory raised "
                                              r"RuntimeError: no header$"):
            diffzoo.open_dataset("raising.ds")


def test_what_a_plugins_dataset_gives_is_checked_once_where_it_is_opened(diffseg_folder):
    """ids() of None, a load() of a dict, a fingerprint() of an int: one PluginError naming the dataset, its
    plugin and the call where the dataset is opened; they were an internal error, the detector's fit's error
    and an invalid record after training."""
    import pytest

    import diffzoo
    from diffzoo.harness.core.errors import PluginError

    def broken(**replaced):
        def factory(path=None):
            dataset = diffzoo.open_dataset(str(diffseg_folder))
            vars(dataset).update(replaced)
            return dataset
        return factory

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            register("bad.ids", broken(ids=lambda split: None))
            register("bad.load", broken(load=lambda sample_id: {"image": None}))
            register("bad.fingerprint", broken(fingerprint=lambda: 1234))
            register("bad.class", lambda path=None: {"not": "a dataset"})

    with plugged(Plugin(), "gives"):
        for name, message in [
            ("bad.ids", r"its ids\('train'\) returned NoneType, not a list of sample ids \(strings\)"),
            ("bad.load", r"its load\('\w+'\) returned dict, not a diffzoo.Sample"),
            ("bad.fingerprint", r"its fingerprint\(\) returned int, not a string"),
            ("bad.class", r"its factory returned dict, not a diffzoo.Dataset"),
        ]:
            with pytest.raises(PluginError, match=rf"^dataset '{name}' from plugin 'gives': {message}$"):
                diffzoo.open_dataset(name)


def test_a_folder_another_adapter_claims_first_names_the_plugin_adapter_that_reads_it(tmp_path, capsys):
    """diffseg30k claims a folder of <id>.image.png and refuses it; a plugin adapter whose sniff takes the
    folder is named with how to open it, where the error only gave diffseg30k's refusal."""
    from PIL import Image


    Image.new("RGB", (8, 8)).save(tmp_path / "x.image.png")
    (tmp_path / "x.label.txt").write_text("edited")

    class Labels:
        @staticmethod
        def sniff(path):
            return any(Path(path).glob("*.label.txt"))

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            register("zz.labels", Labels)  # asked after diffseg30k: adapters are asked in name order

    with plugged(Plugin(), "labels"):
        code, _, err = cli(capsys, "data", "info", tmp_path)
    assert code == 1 and one_line(err).strip() == (
        f"error: {tmp_path}: 1 image(s) have no <id>.mask.png (e.g. x); `--dataset-option skip_unpaired=true` skips "
        f"them (dataset adapter zz.labels recognises it too: --dataset zz.labels --dataset-option path={tmp_path})")


def test_a_suite_of_no_case_is_refused():
    import pytest

    from diffzoo.harness.core.errors import ConfigError
    from diffzoo.harness.suites.model import Suite

    with pytest.raises(ConfigError, match="suite 'empty' has no case"):
        Suite(name="empty", version="1", description="x", cases=())


def test_a_sniffer_that_crashes_leaves_the_other_adapters_to_find_the_dataset(diffseg_folder, caplog):
    """A plugin adapter's bug in sniff(path) stopped `--dataset PATH` for every dataset, built-in ones too."""
    import logging

    from diffzoo.harness.run.factories import open_dataset

    class Crashy:
        @staticmethod
        def sniff(path):
            raise RuntimeError("sniff bug")

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            register("aaa.crashy", Crashy)  # asked first: adapters are asked in name order

    with plugged(Plugin(), "crashy"):
        with caplog.at_level(logging.WARNING):
            dataset = open_dataset(str(diffseg_folder))
        assert dataset.name and len(dataset.ids("train")) > 0
        assert [r.getMessage() for r in caplog.records if "aaa.crashy" in r.getMessage()] == [
            f"{diffseg_folder}: dataset adapter aaa.crashy failed to look at it: RuntimeError: sniff bug"]
