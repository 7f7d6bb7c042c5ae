import json
import os
import pickle
import time

import pytest
import torch

from diffzoo import create_detector
from diffzoo.harness.core.errors import ModelError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.models.checkpoints import (
    cache_dir,
    cached_checkpoints,
    checkpoint_meta,
    describe_mismatch,
    load_checkpoint,
)

pytestmark = pytest.mark.isolated_cache  # tests of the checkpoint cache itself: listing, misses, partial writes

def det(task="binary", ls=None, name="segformer.tiny"):
    torch.manual_seed(0)
    return create_detector(name, task, ls or LabelSpace.from_editors(["a", "b"]))


@pytest.mark.parametrize("task, channels", [("semantic", 3), ("binary", 1)])
def test_save_then_load_gives_identical_outputs(tmp_path, task, channels):
    a = det(task)
    path = a.save(tmp_path / "ck")
    assert path.name == "model.safetensors" and (tmp_path / "ck" / "card.json").exists()
    torch.manual_seed(1)
    b = create_detector("segformer.tiny", task, LabelSpace.from_editors(["a", "b"]))
    x = torch.rand(2, 3, 40, 48)
    assert not torch.equal(a.predict(x).mask_logits, b.predict(x).mask_logits)
    meta = b.load(tmp_path / "ck")
    assert len(meta["sha256"]) == 64 and meta["task"] == task
    out = b.predict(x).mask_logits
    assert out.shape == (2, channels, 40, 48)
    assert torch.equal(a.predict(x).mask_logits, out)


class _Evil:
    """Unpickling this creates the file named in ``MARKER`` (set per test)."""

    marker = ""

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _payload(marker):
    _Evil.marker = str(marker)
    return pickle.dumps({"state_dict": _Evil()})


def test_the_malicious_payload_is_live(tmp_path):
    """Guard for the next test: unpickling this payload does create the marker."""
    marker = tmp_path / "marker"
    pickle.loads(_payload(marker)).get("state_dict").close()
    assert marker.exists()


@pytest.mark.parametrize(
    "where, message",
    [
        ("model.pt", "refusing to load .*pickles"),
        ("model.pth", "refusing to load .*pickles"),
        ("pytorch_model.bin", "refusing to load .*pickles"),
        ("last.ckpt", "refusing to load .*pickles"),
        ("weights.pkl", "refusing to load .*pickles"),
        ("CAT_full_v2.pth.tar", "refusing to load .*: .pth.tar files are pickles"),
        ("model.weights", "not a .safetensors file or a checkpoint folder"),
        ("renamed.safetensors", "refusing to load .*it is a pickle"),
        ("folder/model.safetensors", "refusing to load .*it is a pickle"),
        ("torchsave/model.safetensors", "refusing to load .*torch.save zip"),
    ],
)
def test_pickles_are_refused_and_never_unpickled(tmp_path, monkeypatch, where, message):
    marker = tmp_path / "marker"
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if where.startswith("torchsave"):
        _Evil.marker = str(marker)
        torch.save({"state_dict": _Evil()}, path)
    else:
        path.write_bytes(_payload(marker))
    if where.startswith("folder/"):
        (path.parent / "card.json").write_text(json.dumps({"card": {"name": "segformer.tiny"}, "task": "binary"}))
    for name in ("load", "loads"):  # any unpickling attempt fails the test loudly
        monkeypatch.setattr(pickle, name, lambda *a, **k: pytest.fail("pickle was called"))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    target = path.parent if where.startswith(("folder", "torchsave")) else path
    with pytest.raises(ModelError, match=message):
        det().load(target)
    with pytest.raises(ModelError, match=message):
        load_checkpoint(target)
    assert not marker.exists()


@pytest.mark.parametrize("length", [0x280, 0x380, 0x480, 0x580])
def test_a_checkpoint_whose_header_length_starts_as_a_pickle_does_loads(tmp_path, length):
    """A safetensors header length whose first bytes are 0x80 and a pickle protocol is still safetensors."""
    from safetensors.torch import save_file

    path = tmp_path / "model.safetensors"
    name = "w" * (length - len(save_tensors_header("")))  # the header's JSON grows one byte per name character
    save_file({name: torch.ones(1)}, str(path))
    assert int.from_bytes(path.read_bytes()[:8], "little") == length
    assert load_checkpoint(path)[0][name].tolist() == [1.0]


def save_tensors_header(name: str) -> bytes:
    """The safetensors header JSON of one float32 tensor of shape [1] called ``name``, unpadded."""
    return json.dumps({name: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, separators=(",", ":")).encode()


def test_describe_mismatch_names_the_tensors_that_differ(tmp_path):
    a, b = det("semantic").model.net.state_dict(), det("binary").model.net.state_dict()
    assert describe_mismatch(a, a) is None
    text = describe_mismatch(a, b)
    assert "2 tensor shape(s) differ" in text
    assert "classifier.weight is [1, 32, 1, 1] in the checkpoint, [3, 32, 1, 1] in the model" in text
    del b[next(iter(b))]
    b["extra.weight"] = torch.zeros(2)
    text = describe_mismatch(a, b)
    assert "1 tensor(s) missing from the checkpoint" in text and "1 unexpected tensor(s): extra.weight" in text


def test_describe_mismatch_takes_shapes_and_refuses_what_is_not_a_tensor():
    expected = {"a.weight": (2, 3), "b.weight": (4,)}
    assert describe_mismatch(expected, {"a.weight": torch.zeros(2, 3), "b.weight": torch.zeros(4)}) is None
    # a value that merely looks like a shape is not a tensor of that shape
    text = describe_mismatch(expected, {"a.weight": torch.zeros(2, 3), "b.weight": (4,)})
    assert text == "1 tensor shape(s) differ: b.weight is not a tensor in the checkpoint, [4] in the model"
    many = {f"k{i}": (1,) for i in range(5)}
    assert describe_mismatch(many, {}, limit=2) == "5 tensor(s) missing from the checkpoint: k0, k1 and 3 more"


@pytest.mark.parametrize(
    "card, message",
    [("{not json", "card.json is not readable JSON"), ("[1, 2]", "is not a JSON object"),
     ('{"format": "diffzoo-checkpoint-9"}', "format 'diffzoo-checkpoint-9'.*newer diffzoo")],
)
def test_a_bad_card_is_a_model_error(tmp_path, card, message):
    det().save(tmp_path / "ck")
    (tmp_path / "ck" / "card.json").write_text(card)
    with pytest.raises(ModelError, match=message):
        det().load(tmp_path / "ck")
    with pytest.raises(ModelError, match=message):
        checkpoint_meta(tmp_path / "ck")


def test_cached_checkpoints_are_listed_newest_first(tmp_path):
    assert cached_checkpoints("segformer.tiny") == []
    for i, key in enumerate(["old", "new"]):
        det().save(cache_dir("segformer.tiny", key))
        stamp = time.time() - 100 + i
        os.utime(cache_dir("segformer.tiny", key) / "model.safetensors", (stamp, stamp))
    (cache_dir("segformer.tiny", "x") / "partial").mkdir(parents=True)  # no weights: not a checkpoint
    assert [p.name for p in cached_checkpoints("segformer.tiny")] == ["new", "old"]


def test_task_card_and_shape_mismatch_are_clear(tmp_path):
    det("semantic").save(tmp_path / "sem")
    with pytest.raises(ModelError, match="trained for task 'semantic', not 'binary'"):
        det("binary").load(tmp_path / "sem")
    with pytest.raises(ModelError, match="has classes"):
        det("semantic", LabelSpace.from_editors(["a", "b", "c"])).load(tmp_path / "sem")
    with pytest.raises(ModelError, match="is for detector 'segformer.tiny', not 'segformer.b0'"):
        det("semantic", name="segformer.b0").load(tmp_path / "sem")
    # same card, weights edited to a wrong shape
    from safetensors.torch import load_file, save_file

    weights = tmp_path / "sem" / "model.safetensors"
    state = load_file(str(weights))
    key = next(k for k in state if k.endswith("classifier.weight"))
    state[key] = torch.zeros(7, *state[key].shape[1:])
    save_file(state, str(weights))
    card = json.loads((tmp_path / "sem" / "card.json").read_text())
    card["sha256"] = sha256_file(weights)  # a consistent card: a card without a sha256 is refused
    (tmp_path / "sem" / "card.json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="does not fit segformer.tiny"):
        det("semantic").load(tmp_path / "sem")


def test_changed_weights_fail_the_sha_check(tmp_path):
    det().save(tmp_path / "ck")
    w = tmp_path / "ck" / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-1] ^= 1
    w.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sha256 differs"):
        det().load(tmp_path / "ck")


def test_pretrained_offline_names_what_to_download():
    from diffzoo.harness.core.errors import WeightsUnavailableError

    with pytest.raises(WeightsUnavailableError, match="nvidia/mit-b0.*--no-pretrained"):
        create_detector("segformer.b0", "binary", pretrained=True)
