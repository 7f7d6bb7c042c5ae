import pickle

import pytest
import torch

from diffzoo import create_detector
from diffzoo.harness.errors import ModelError
from diffzoo.harness.types import LabelSpace


def det(task="binary", ls=None, name="segformer.tiny"):
    torch.manual_seed(0)
    return create_detector(name, task, ls or LabelSpace.from_editors(["a", "b"]))


def test_save_then_load_gives_identical_outputs(tmp_path):
    a = det("semantic")
    path = a.save(tmp_path / "ck")
    assert path.name == "model.safetensors" and (tmp_path / "ck" / "card.json").exists()
    torch.manual_seed(1)
    b = create_detector("segformer.tiny", "semantic", LabelSpace.from_editors(["a", "b"]))
    x = torch.rand(2, 3, 40, 48)
    assert not torch.equal(a.predict(x).mask_logits, b.predict(x).mask_logits)
    meta = b.load(tmp_path / "ck")
    assert len(meta["sha256"]) == 64
    out = b.predict(x).mask_logits
    assert out.shape == (2, 3, 40, 48)
    assert torch.equal(a.predict(x).mask_logits, out)


def test_pickle_is_refused_without_unpickling(tmp_path):
    evil = tmp_path / "model.pt"
    evil.write_bytes(pickle.dumps({"x": 1}))
    with pytest.raises(ModelError, match="refusing to load .*pickles"):
        det().load(evil)


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
    (tmp_path / "sem" / "card.json").write_text(
        (tmp_path / "sem" / "card.json").read_text().replace('"sha256"', '"old_sha256"'))
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
    from diffzoo.harness.errors import WeightsUnavailableError

    with pytest.raises(WeightsUnavailableError, match="nvidia/mit-b0.*--no-pretrained"):
        create_detector("segformer.b0", "binary", pretrained=True)
