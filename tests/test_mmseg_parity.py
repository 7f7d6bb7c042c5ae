"""SegFormer-B2 two ways: diffzoo's native ``segformer.b2`` (transformers'
SegformerForSemanticSegmentation) against ``mmseg.segformer-b2`` (mmseg's
MixVisionTransformer + SegformerHead from its B2 config), same weights.

The native state dict is mapped onto mmseg's (every target key made once,
every source key used, or the test fails) and both networks run in eval mode
on the same normalised input; outputs are compared at the head's resolution
(1/4 of the input).  Where the designs differ (docs/mmseg.md, "SegFormer-B2:
the same weights through both"), the test compares what matches and checks
that the difference is the documented one:

- the encoders agree as diffzoo builds them (``segformer.b2`` as is);
- the decode heads agree once the native head has mmseg's width (256, not
  768) and mmseg's per-stage ReLU is switched off; with it on they differ.

Needs the MMSeg backend (skipped without it; a failure under
DIFFZOO_REQUIRE_MMSEG=1, as in CI).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from diffzoo import DetectorBuild, create_detector
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.types import LabelSpace

from helpers.backends import require_backend

ATOL = 1e-4
NATIVE, MMSEG = "segformer.b2", "mmseg.segformer-b2"
ENCODER, BACKBONE = "segformer.segformer.", "segmentor.backbone."  # prefixes in det.model.net
HEAD, DECODE_HEAD = "segformer.decode_head.", "segmentor.decode_head."
LABELS = LabelSpace.from_editors(["a", "b", "c"])


@pytest.fixture
def backend():
    return require_backend()


def conv1x1(t: torch.Tensor) -> torch.Tensor:
    """A Linear weight (out, in) as a 1x1 convolution's (out, in, 1, 1); biases as they are."""
    return t[:, :, None, None] if t.dim() == 2 else t


class Mapping:
    """Builds target tensors from source tensors, remembering which source keys it read."""

    def __init__(self, source: dict[str, torch.Tensor]):
        self.source, self.used, self.out = source, set(), {}

    def take(self, key: str) -> torch.Tensor:
        self.used.add(key)
        return self.source[key]

    def has(self, key: str) -> bool:
        return key in self.source

    def check(self, target: dict[str, torch.Tensor], source_prefix: str, target_prefix: str) -> None:
        """Every target key under ``target_prefix`` made, with its shape; every
        source key under ``source_prefix`` used."""
        wanted = {k for k in target if k.startswith(target_prefix)}
        given = {k for k in self.source if k.startswith(source_prefix)}
        assert set(self.out) == wanted, (sorted(wanted - set(self.out))[:5], sorted(set(self.out) - wanted)[:5])
        assert self.used == given, sorted(given - self.used)[:5]
        wrong = [(k, tuple(v.shape), tuple(target[k].shape)) for k, v in self.out.items() if v.shape != target[k].shape]
        assert not wrong, wrong[:5]


def map_encoder(m: Mapping, depths: list[int]) -> None:
    """transformers' MiT encoder -> mmseg's MixVisionTransformer (``layers.i`` = [patch embed, blocks, norm])."""
    for i, depth in enumerate(depths):
        s, t = f"{ENCODER}stages.{i}.", f"{BACKBONE}layers.{i}."
        for p in ("weight", "bias"):
            m.out[f"{t}0.projection.{p}"] = m.take(f"{s}patch_embeddings.proj.{p}")
            m.out[f"{t}0.norm.{p}"] = m.take(f"{s}patch_embeddings.layer_norm.{p}")
            m.out[f"{t}2.{p}"] = m.take(f"{s}layer_norm.{p}")
            for j in range(depth):
                b, d = f"{s}blocks.{j}.", f"{t}1.{j}."
                m.out[f"{d}norm1.{p}"] = m.take(f"{b}layernorm_before.{p}")
                m.out[f"{d}norm2.{p}"] = m.take(f"{b}layernorm_after.{p}")
                # nn.MultiheadAttention keeps q, k and v in one in_proj
                m.out[f"{d}attn.attn.in_proj_{p}"] = torch.cat([m.take(f"{b}attention.{q}_proj.{p}") for q in "qkv"])
                m.out[f"{d}attn.attn.out_proj.{p}"] = m.take(f"{b}attention.o_proj.{p}")
                if m.has(f"{b}attention.sequence_reduction.sequence_reduction.{p}"):  # sr_ratio > 1
                    m.out[f"{d}attn.sr.{p}"] = m.take(f"{b}attention.sequence_reduction.sequence_reduction.{p}")
                    m.out[f"{d}attn.norm.{p}"] = m.take(f"{b}attention.sequence_reduction.layer_norm.{p}")
                # MixFFN: Linear -> depthwise 3x3 -> GELU -> Linear; mmseg's are 1x1 convolutions
                m.out[f"{d}ffn.layers.0.{p}"] = conv1x1(m.take(f"{b}mlp.fc1.{p}"))
                m.out[f"{d}ffn.layers.1.{p}"] = m.take(f"{b}mlp.dwconv.dwconv.{p}")
                m.out[f"{d}ffn.layers.4.{p}"] = conv1x1(m.take(f"{b}mlp.fc2.{p}"))


def map_head(m: Mapping, stages: int, bn_eps: float) -> None:
    """transformers' all-MLP head -> mmseg's SegformerHead.

    Per stage, transformers has a Linear with bias; mmseg a bias-free 1x1
    convolution + BN (+ ReLU, see the module docstring): an eval-mode BN with
    weight 1, mean 0 and variance 1 - eps adds the Linear's bias and nothing
    else.  transformers concatenates the stages last first, mmseg first first:
    the fusion weight's input blocks are reversed.
    """
    for i in range(stages):
        m.out[f"{DECODE_HEAD}convs.{i}.conv.weight"] = conv1x1(m.take(f"{HEAD}linear_projections.{i}.proj.weight"))
        bias = m.take(f"{HEAD}linear_projections.{i}.proj.bias")
        bn = f"{DECODE_HEAD}convs.{i}.bn."
        m.out[bn + "weight"], m.out[bn + "bias"] = torch.ones_like(bias), bias
        m.out[bn + "running_mean"] = torch.zeros_like(bias)
        m.out[bn + "running_var"] = torch.full_like(bias, 1 - bn_eps)
        m.out[bn + "num_batches_tracked"] = torch.tensor(0)
    fuse = m.take(f"{HEAD}linear_fuse.weight")
    m.out[f"{DECODE_HEAD}fusion_conv.conv.weight"] = torch.cat(fuse.chunk(stages, dim=1)[::-1], dim=1)
    for p in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked"):
        m.out[f"{DECODE_HEAD}fusion_conv.bn.{p}"] = m.take(f"{HEAD}batch_norm.{p}")
    for p in ("weight", "bias"):
        m.out[f"{DECODE_HEAD}conv_seg.{p}"] = m.take(f"{HEAD}classifier.{p}")


def randomised(net: torch.nn.Module, seed: int = 0) -> dict[str, torch.Tensor]:
    """``net``'s state moved off its initial values (LayerNorm and BN weights
    of 1, biases and BN statistics of 0 would hide a swapped mapping), loaded
    into ``net`` and returned."""
    g = torch.Generator().manual_seed(seed)
    state = {}
    for k, v in net.state_dict().items():
        if v.is_floating_point():
            noise = 0.05 * torch.randn(v.shape, generator=g)
            v = (v + noise).abs() + 0.5 if k.endswith("running_var") else v + noise
        state[k] = v
    net.load_state_dict(state)
    return state


def native_detector(decoder_width: int | None = None):
    """``segformer.b2`` as diffzoo builds it; ``decoder_width``: with another all-MLP head width."""
    entry = get_registry().get("detector", NATIVE)
    card = entry.card
    if decoder_width is not None:
        card = dataclasses.replace(card, arch={**card.arch, "decoder_hidden_size": decoder_width})
    torch.manual_seed(0)
    return entry.load()(DetectorBuild(card, "semantic", LABELS, pretrained=False))


def mmseg_detector():
    torch.manual_seed(1)
    return create_detector(MMSEG, "semantic", LABELS)


def mapped(native, mmseg, with_head: bool) -> dict[str, torch.Tensor]:
    """The native net's (randomised) state mapped onto the mmseg net's, checked complete."""
    source = randomised(native.model.net)
    target = mmseg.model.net.state_dict()
    m = Mapping(source)
    map_encoder(m, native.card.arch["depths"])
    if with_head:
        map_head(m, len(native.card.arch["depths"]), mmseg.model.net.segmentor.decode_head.convs[0].bn.eps)
        m.check(target, "", "")
    else:
        m.check(target, ENCODER, BACKBONE)
    return m.out


def image() -> torch.Tensor:
    return torch.randn(1, 3, 128, 128, generator=torch.Generator().manual_seed(2))  # normalised pixels


def test_the_architecture_settings_match_but_for_the_documented_ones(backend):
    hf = native_detector().model.net.segformer.config
    segmentor = mmseg_detector().model.net.segmentor
    bb, head = segmentor.backbone, segmentor.decode_head
    assert type(bb).__name__ == "MixVisionTransformer" and type(head).__name__ == "SegformerHead"
    assert list(hf.depths) == bb.num_layers
    assert list(hf.num_attention_heads) == bb.num_heads
    assert list(hf.hidden_sizes) == [bb.embed_dims * h for h in bb.num_heads] == head.in_channels
    assert list(hf.sr_ratios) == bb.sr_ratios
    assert list(hf.patch_sizes) == bb.patch_sizes and list(hf.strides) == bb.strides
    ffn = [block.ffn.layers[0] for stage in bb.layers for block in stage[1]]
    assert all(f.out_channels == r * f.in_channels for f, r in zip(ffn, [r for r, d in zip(hf.mlp_ratios, hf.depths)
                                                                         for _ in range(d)], strict=True))
    assert hf.hidden_act == "gelu" and type(bb.layers[0][1][0].ffn.activate).__name__ == "GELU"
    drop_path = [m.drop_prob for n, m in bb.named_modules() if n.endswith("attn.dropout_layer")]
    assert hf.drop_path_rate == pytest.approx(max(drop_path)) == 0.1  # training only
    assert hf.classifier_dropout_prob == head.dropout_ratio == 0.1  # training only
    assert head.align_corners is False  # transformers' head upsamples with align_corners=False too
    # the documented differences
    assert (hf.decoder_hidden_size, head.channels) == (768, 256)  # the paper's B2 width vs mmseg's B0 width
    assert [type(m).__name__ for m in head.convs[0].children()] == ["Conv2d", "BatchNorm2d", "ReLU"]  # vs a Linear
    assert {m.eps for m in bb.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-6}  # transformers: 1e-5


def test_the_encoders_agree_as_diffzoo_builds_them(backend):
    native, mmseg = native_detector(), mmseg_detector()
    assert native.card.arch["decoder_hidden_size"] == 768
    state = mapped(native, mmseg, with_head=False)
    missing, unexpected = mmseg.model.net.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith(DECODE_HEAD) for k in missing)
    x = image()
    with torch.no_grad():
        ours = native.model.net.segformer.segformer(pixel_values=x, output_hidden_states=True).hidden_states
        theirs = mmseg.model.net.segmentor.backbone(x)
    assert [tuple(f.shape) for f in ours] == [tuple(f.shape) for f in theirs] == [
        (1, 64, 32, 32), (1, 128, 16, 16), (1, 320, 8, 8), (1, 512, 4, 4)]
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


def test_the_logits_agree_where_the_heads_match(backend):
    mmseg = mmseg_detector()
    native = native_detector(decoder_width=mmseg.model.net.segmentor.decode_head.channels)
    mmseg.model.net.load_state_dict(mapped(native, mmseg, with_head=True))
    x = image()
    convs = mmseg.model.net.segmentor.decode_head.convs
    assert all(c.with_activation for c in convs)
    for c in convs:
        c.with_activation = False  # mmseg's per-stage ReLU, which transformers' head has not
    with torch.no_grad():
        ours, theirs = native.model.net(x), mmseg.model.net(x)
        assert ours.shape == theirs.shape == (1, LABELS.num_classes, 32, 32)  # 1/4: the head's resolution
        torch.testing.assert_close(ours, theirs, atol=ATOL, rtol=0)
        for c in convs:
            c.with_activation = True
        assert (native.model.net(x) - mmseg.model.net(x)).abs().max() > 100 * ATOL  # the ReLU matters


def test_a_mapping_that_misses_or_leaves_keys_fails():
    target = {"t.a": torch.zeros(2), "t.b": torch.zeros(2)}
    m = Mapping({"s.a": torch.ones(2), "s.b": torch.ones(2)})
    m.out["t.a"] = m.take("s.a")
    with pytest.raises(AssertionError):  # t.b not made
        m.check(target, "s.", "t.")
    m.out["t.b"] = m.take("s.a")
    with pytest.raises(AssertionError):  # s.b not used
        m.check(target, "s.", "t.")
    m.out["t.b"] = m.take("s.b")[:1]
    with pytest.raises(AssertionError):  # wrong shape
        m.check(target, "s.", "t.")
    m.out["t.b"] = m.take("s.b")
    m.check(target, "s.", "t.")
