"""Auxiliary heads: a network may return ``(logits, [(aux_logits, weight)])`` in training.

The shared trainer's segmentation loss is then ``loss(main) + weight * loss(aux)``;
the Normalized wrapper crops the padding from every map; predict() uses the
main logits only.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.models.trainer import segmentation_loss
from diffzoo.plugin import (
    IGNORE_INDEX,
    DetectorBuild,
    DetectorCard,
    LabelSpace,
    Normalized,
    SegmentationDetector,
    TrainConfig,
    train_loop,
)

WEIGHT = 0.4


class AuxNet(nn.Module):
    """Main head at stride 2, auxiliary head at stride 4 (different resolutions on purpose)."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.decode_head = nn.Conv2d(4, num_outputs, 1)
        self.auxiliary_head = nn.Conv2d(4, num_outputs, 3, stride=2, padding=1)

    def forward(self, x):
        feats = torch.relu(self.stem(x))
        main = self.decode_head(feats)
        if not self.training:
            return main
        return main, [(self.auxiliary_head(feats), WEIGHT)]


class AuxDetector(SegmentationDetector):
    def build_network(self, num_outputs, pretrained):
        return AuxNet(num_outputs)


def make_detector(task: str) -> AuxDetector:
    card = DetectorCard(name="test.aux", description="aux-head test network", tasks=("binary", "semantic"),
                        weights=None, input_size=32, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    torch.manual_seed(0)
    return AuxDetector(DetectorBuild(card, task, LabelSpace.from_editors(["a", "b"])))


def by_hand(logits: torch.Tensor, target: torch.Tensor, task: str) -> torch.Tensor:
    logits = F.interpolate(logits, size=target.shape[-2:], mode="bilinear", align_corners=False)
    valid = target != IGNORE_INDEX
    if task == "semantic":
        per_pixel = F.cross_entropy(logits, target.clamp(max=logits.shape[1] - 1), reduction="none")
        return per_pixel[valid].mean()
    return F.binary_cross_entropy_with_logits(logits[:, 0][valid], target[valid].float())


@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_loss_is_main_plus_weighted_aux_and_the_aux_head_gets_gradients(task):
    det = make_detector(task)
    det.model.train()
    images = torch.rand(2, 3, 40, 56)  # padded to 64 x 64 by Normalized, then cropped
    high = 2 if task == "binary" else det.num_outputs
    target = torch.randint(0, high, (2, 40, 56))
    target[:, :5] = IGNORE_INDEX
    out = det.model(images)
    main, aux = out
    assert main.shape[-2:] == (20, 28) and [(a.shape[-2:], w) for a, w in aux] == [((10, 14), WEIGHT)]
    # the crops are the first rows/columns of the un-cropped maps
    x = (images - det.model.mean) / det.model.std
    full_main, [(full_aux, _)] = det.model.net(F.pad(x, (0, 8, 0, 24), mode="reflect"))
    assert torch.equal(main, full_main[..., :20, :28]) and torch.equal(aux[0][0], full_aux[..., :10, :14])

    loss = segmentation_loss(out, target, task)
    expected = by_hand(main, target, task) + WEIGHT * by_hand(aux[0][0], target, task)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss.item() != pytest.approx(segmentation_loss(main, target, task).item(), rel=1e-3)

    loss.backward()
    head = det.model.net.auxiliary_head
    assert head.weight.grad is not None and head.weight.grad.abs().sum() > 0
    assert det.model.net.decode_head.weight.grad.abs().sum() > 0


def test_train_loop_updates_the_aux_head():
    det = make_detector("semantic")
    images, target = torch.rand(4, 3, 32, 32), torch.randint(0, det.num_outputs, (4, 32, 32))
    loader = [(images[:2], target[:2], 0), (images[2:], target[2:], 0)]
    cfg = TrainConfig(iterations=2, batch_size=2, crop_size=32, warmup_iters=0, lr=0.1, amp=False)
    before = det.model.net.auxiliary_head.weight.clone()
    groups = [{"params": list(det.model.parameters()), "lr": cfg.lr}]
    log = train_loop(det.model, _Loader(loader), lambda o, t: segmentation_loss(o, t, "semantic"),
                     groups, cfg, torch.device("cpu"))
    assert len(log["losses"]) == 2 and not det.model.training
    assert not torch.equal(before, det.model.net.auxiliary_head.weight)


class _Loader(list):
    """The few DataLoader attributes train_loop reads, over fixed batches."""

    batch_size = 2
    sampler = None


def test_predict_returns_the_main_logits_only():
    det = make_detector("semantic")
    images = torch.rand(2, 3, 40, 56)
    det.model.train()  # predict switches to eval itself
    logits = det.predict(images).mask_logits
    x = (images - det.model.mean) / det.model.std
    main = det.model.net.eval()(F.pad(x, (0, 8, 0, 24), mode="reflect"))[..., :20, :28]
    assert torch.equal(logits, F.interpolate(main, size=(40, 56), mode="bilinear", align_corners=False))
    assert not det.model.training


def test_normalized_passes_an_unpadded_tuple_through():
    net = AuxNet(1).train()
    wrapped = Normalized(net, (0.5,) * 3, (0.25,) * 3)
    main, [(aux, weight)] = wrapped(torch.rand(1, 3, 64, 32))
    assert main.shape[-2:] == (32, 16) and aux.shape[-2:] == (16, 8) and weight == WEIGHT
