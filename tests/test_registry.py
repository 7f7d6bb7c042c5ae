from types import SimpleNamespace

import pytest

from diffzoo.harness.core.errors import PluginError, RegistryError, UnknownNameError
from diffzoo.harness.core.registry import Registry


def card(name: str) -> SimpleNamespace:
    """A detector is registered with its card, under the card's name; these tests read names only."""
    return SimpleNamespace(name=name)


def make():
    r = Registry()
    for tag in ("b10", "b2", "b0"):
        r.add("detector", f"seg.{tag}", "x:y", default=tag == "b2", source="p1", card=card(f"seg.{tag}"))
    r.add("detector", "other.small", "x:y", source="p2", card=card("other.small"))
    return r


def test_family_resolves_to_default_tag_and_single_tag_family():
    r = make()
    assert r.resolve("detector", "seg") == "seg.b2"
    assert r.resolve("detector", "other") == "other.small"
    assert r.resolve("detector", "seg.b10") == "seg.b10"


def test_wildcards_and_natural_sort():
    r = make()
    assert [e.name for e in r.list("detector", "seg*")] == ["seg.b0", "seg.b2", "seg.b10"]
    assert [e.name for e in r.expand("detector", "all")][:1] == ["other.small"]
    assert [e.name for e in r.expand("detector", "seg.b0,seg,seg.b2")] == ["seg.b0", "seg.b2"]


def test_unknown_name_suggests():
    r = make()
    with pytest.raises(UnknownNameError) as exc:
        r.get("detector", "seg.b3")
    assert "Did you mean" in str(exc.value) and "'seg.b2'" in str(exc.value)


def test_a_hint_names_what_holds_the_name_and_nothing_for_a_name_unlike_any():
    r = make()
    r.add("detector", "benco.mvss-net", "x:y", source="p3", card=card("benco.mvss-net"))
    r.add("detector", "benco.mesorch", "x:y", source="p3", card=card("benco.mesorch"))
    with pytest.raises(UnknownNameError) as exc:
        r.get("detector", "mvss")  # the short name people use: held whole by one entry (ratio 0.44)
    assert "Did you mean 'benco.mvss-net'?" in str(exc.value)
    with pytest.raises(UnknownNameError) as exc:
        r.get("detector", "nosuch")  # nothing like it: no hint (it was 'benco.mesorch', ratio 0.53)
    assert "Did you mean" not in str(exc.value) and "Available: " in str(exc.value)


def test_a_hint_names_first_what_starts_with_the_name_then_the_shortest_that_holds_it():
    from diffzoo.harness.core.errors import did_you_mean

    # `list detectors seg` hinted 'mmseg' (shorter) before 'segformer', the family the prefix names
    assert did_you_mean("seg", ["segformer.tiny", "mmseg", "segformer"]) == " Did you mean 'segformer'?"
    assert did_you_mean("mvss", ["benco.mvss-net", "mvss-netlike.big"], n=2) == (
        " Did you mean 'mvss-netlike.big' or 'benco.mvss-net'?")


def test_a_name_spelt_in_other_case_is_hinted_and_all_is_named_where_it_is_accepted():
    r = make()
    with pytest.raises(UnknownNameError) as exc:
        r.expand("detector", "ALL")
    assert "Did you mean 'all'?" in str(exc.value) and "Available: all, other" in str(exc.value)
    with pytest.raises(UnknownNameError) as exc:
        r.get("detector", "Other.Small")
    assert "Did you mean 'other.small'" in str(exc.value) and "all" not in exc.value.available
    with pytest.raises(UnknownNameError, match="unknown detector 5"):
        r.get("detector", 5)  # a caller's mistake of type is named, never an AttributeError
    with pytest.raises(UnknownNameError, match="unknown detector 'nothing\\*'"):
        r.expand("detector", "nothing*")


def test_duplicates_name_both_sources():
    r = make()
    with pytest.raises(RegistryError, match="'p1' and by plugin 'p3'"):
        r.add("detector", "seg.b0", "a:b", source="p3", card=card("seg.b0"))
    with pytest.raises(RegistryError, match="two defaults"):
        r.add("detector", "seg.b7", "a:b", default=True, source="p3", card=card("seg.b7"))


def test_a_detector_is_registered_under_its_cards_name():
    r = Registry()
    with pytest.raises(RegistryError, match="detector 'mine.v1' from plugin 'p' is registered without card="):
        r.add("detector", "mine.v1", "x:y", source="p")
    with pytest.raises(RegistryError, match="registered with the card of 'mine.conv': register it as that name"):
        r.add("detector", "mine.v1", "x:y", source="p", card=card("mine.conv"))
    assert r.add("detector", "mine.conv", "x:y", source="p", card=card("mine.conv")).name == "mine.conv"



def test_a_detector_registered_without_a_description_is_listed_with_its_cards():
    """The README's plugin registers its card without description=: `list detectors` shows the card's."""
    from diffzoo.plugin import DetectorCard

    r = Registry()
    mine = DetectorCard(name="mydet.small", description="a small conv net", tasks=("binary",))
    assert r.add("detector", mine.name, "x:y", source="p", card=mine).description == "a small conv net"
    other = DetectorCard(name="mydet.large", description="a large conv net", tasks=("binary",))
    assert r.add("detector", other.name, "x:y", source="p", card=other, description="given").description == "given"

def test_a_name_holding_a_space_or_the_slice_separator_is_refused():
    r = Registry()
    for name in ("", " a", "a b"):
        with pytest.raises(RegistryError, match=f"^generator name {name!r} from plugin 'p' is not a valid name: "):
            r.add("generator", name, "x:y", source="p")
    with pytest.raises(RegistryError, match="generator name 'sd@2' from plugin 'p' is not a valid name: a name is not "
                                            "empty and holds no space and no '@', which names a metric's slice"):
        r.add("generator", "sd@2", "x:y", source="p")


def test_lazy_entries_import_on_load_only():
    r = Registry()
    e = r.add("suite", "s", "json:dumps", source="p")
    assert e._loaded is None
    import json

    assert e.load() is json.dumps
    bad = r.add("suite", "bad", "no_such_module_xyz:thing", source="plug")
    with pytest.raises(PluginError, match="plugin 'plug' cannot be loaded"):
        bad.load()
