"""OpenSDI's own MaskCLIP ``state_dict`` -> :class:`~diffzoo.plugins.opensdi.model.MaskClipNet`'s.

OpenSDI (iamwangyabin/OpenSDI, ``model/MaskCLIP.py``) saves ``{'model':
MaskCLIP.state_dict(), ...}``; its names are ``clip.*`` (OpenAI's CLIP, whose
names open_clip keeps), ``prompt_learner.*``, ``aggregator.*`` (the side
network: ``vit_model``, ``fusion_layers``, ``text_projection``,
``mask_decoder``) and ``cls_aggregator.*``.  :func:`from_reference` renames
every tensor by the table :data:`RULES`.  It is strict: a name no rule knows,
a tensor every MaskCLIP has that the state lacks (:data:`REQUIRED`, :data:`FAMILIES`),
and, given the target model's names, one it needs or lacks, are each a
ModelError naming them, in OpenSDI's spelling.
No tensor is changed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from diffzoo.plugin import ModelError, name_some

_FIXED: list[tuple[str, str]] = [
    ("clip.{rest}", "clip.{rest}"),
    ("prompt_learner.ctx_neg", "learned.prompts.real"),
    ("prompt_learner.ctx_pos", "learned.prompts.fake"),
    ("aggregator.vit_model.patch_embed.proj.{rest}", "learned.side.vit.patch_embed.{rest}"),
    ("aggregator.vit_model.pos_embed", "learned.side.vit.pos_embed"),
    ("aggregator.vit_model.blocks.{i}.{rest}", "learned.side.vit.blocks.{i}.{rest}"),
    ("aggregator.text_projection.{rest}", "learned.side.text_in.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.channel_adjust.0.{rest}", "learned.side.fusions.{i}.clip_in.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.channel_adjust.1.{rest}", "learned.side.fusions.{i}.clip_norm.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.query_proj.{rest}", "learned.side.fusions.{i}.q.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.key_proj.{rest}", "learned.side.fusions.{i}.k.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.value_proj.{rest}", "learned.side.fusions.{i}.v.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.output_proj.0.{rest}", "learned.side.fusions.{i}.out.{rest}"),
    ("aggregator.fusion_layers.layer_{i}.output_proj.1.{rest}", "learned.side.fusions.{i}.out_norm.{rest}"),
    ("aggregator.mask_decoder.to_q.{rest}", "learned.side.decoder.query.{rest}"),
    ("aggregator.mask_decoder.to_kv.{rest}", "learned.side.decoder.kv.{rest}"),
    ("aggregator.mask_decoder.proj.{rest}", "learned.side.decoder.answer.{rest}"),
    ("aggregator.mask_decoder.linear_fuse.{rest}", "learned.side.decoder.fuse.{rest}"),
    ("aggregator.mask_decoder.norm.{rest}", "learned.side.decoder.norm.{rest}"),
    ("aggregator.mask_decoder.predict.{rest}", "learned.side.decoder.head.{rest}"),
    ("cls_aggregator.layers.0.multihead_attn.{rest}", "learned.image_head.attn.{rest}"),
    ("cls_aggregator.layers.0.layer_norm.{rest}", "learned.image_head.norm.{rest}"),
    ("cls_aggregator.projector.0.{rest}", "learned.image_head.proj.{rest}"),
]

_LEVELS: dict[int, dict[int, str]] = {
    # OpenSDI builds each pyramid level as one nn.Sequential: the scaling layers, then
    # 1x1 conv, norm, 3x3 conv, norm; diffzoo keeps the two parts apart (up, reduce).
    0: {0: "up.0", 1: "up.1", 3: "up.3", 4: "reduce.0", 5: "reduce.1", 6: "reduce.2", 7: "reduce.3"},  # x4
    1: {0: "up.0", 1: "reduce.0", 2: "reduce.1", 3: "reduce.2", 4: "reduce.3"},  # x2
    2: {0: "reduce.0", 1: "reduce.1", 2: "reduce.2", 3: "reduce.3"},  # x1
    3: {1: "reduce.0", 2: "reduce.1", 3: "reduce.2", 4: "reduce.3"},  # x0.5 (index 0 is a max-pool)
}

RULES: list[tuple[str, str]] = _FIXED + [
    (f"aggregator.mask_decoder.stages.{level}.{index}.{{rest}}", f"learned.side.decoder.levels.{level}.{mine}.{{rest}}")
    for level, table in _LEVELS.items() for index, mine in table.items()
]
"""(OpenSDI's name, diffzoo's name); ``{i}`` is an index, ``{rest}`` the rest of the name."""


def _wb(*names: str) -> list[str]:
    return [f"{n}.{p}" for n in names for p in ("weight", "bias")]


_CLIP_BLOCK = [*_wb("ln_1", "attn.out_proj", "ln_2", "mlp.c_fc", "mlp.c_proj"),
               "attn.in_proj_weight", "attn.in_proj_bias"]
FAMILIES: dict[str, list[str]] = {
    "aggregator.vit_model.blocks.{i}.": [*_wb("norm1", "attn.qkv", "attn.proj", "norm2", "mlp.fc1", "mlp.fc2"),
                                         "attn.rel_pos_h", "attn.rel_pos_w"],
    "aggregator.fusion_layers.layer_{i}.": _wb("channel_adjust.0", "channel_adjust.1", "query_proj", "key_proj",
                                               "value_proj", "output_proj.0", "output_proj.1"),
    "clip.visual.transformer.resblocks.{i}.": _CLIP_BLOCK,
    "clip.transformer.resblocks.{i}.": _CLIP_BLOCK,
}
"""Indexed modules: every index present must have every tensor listed (ViT blocks and CLIP
blocks from 0 on, without gaps)."""

REQUIRED: list[str] = [
    "prompt_learner.ctx_neg", "prompt_learner.ctx_pos", "aggregator.vit_model.pos_embed",
    *_wb("aggregator.vit_model.patch_embed.proj", "aggregator.text_projection"),
    *_wb(*(f"aggregator.mask_decoder.{n}" for n in ("to_q", "to_kv", "proj", "linear_fuse", "norm", "predict"))),
    *_wb(*(f"aggregator.mask_decoder.stages.{level}.{index}" for level, table in _LEVELS.items() for index in table)),
    *_wb("cls_aggregator.layers.0.multihead_attn.out_proj", "cls_aggregator.layers.0.layer_norm"),
    "cls_aggregator.layers.0.multihead_attn.in_proj_weight", "cls_aggregator.layers.0.multihead_attn.in_proj_bias",
    "cls_aggregator.projector.0.weight",
    "clip.visual.conv1.weight", "clip.visual.class_embedding", "clip.visual.positional_embedding", "clip.visual.proj",
    *_wb("clip.visual.ln_pre", "clip.visual.ln_post", "clip.ln_final"),
    "clip.token_embedding.weight", "clip.positional_embedding", "clip.text_projection", "clip.logit_scale",
]
"""The tensors every OpenSDI MaskCLIP has, whatever its sizes."""


def missing_reference(names: Iterable[str]) -> list[str]:
    """The tensors an OpenSDI MaskCLIP state with tensors ``names`` lacks (:data:`REQUIRED`,
    and each indexed module's whole set, :data:`FAMILIES`)."""
    have = set(names)
    missing = [n for n in REQUIRED if n not in have]
    for family, tensors in FAMILIES.items():
        head, tail = family.split("{i}")
        found = re.compile(re.escape(head) + r"(\d+)" + re.escape(tail))
        indices = {int(m.group(1)) for n in have if (m := found.match(n))}
        if "fusion" not in family:
            indices |= set(range(max(indices, default=0) + 1))
        names = (f"{head}{i}{tail}{t}" for i in sorted(indices) for t in tensors)
        missing += [n for n in names if n not in have]
    return missing


def _regex(pattern: str) -> re.Pattern[str]:
    parts = re.split(r"(\{i\}|\{rest\})", pattern)
    body = "".join({"{i}": r"(?P<i>\d+)", "{rest}": r"(?P<rest>.+)"}.get(p, re.escape(p)) for p in parts)
    return re.compile(body + r"\Z")


_FORWARD = [(_regex(ref), mine) for ref, mine in RULES]
_BACKWARD = [(_regex(mine), ref) for ref, mine in RULES]


def _rename(name: str, table: list[tuple[re.Pattern[str], str]]) -> str | None:
    for regex, template in table:
        m = regex.match(name)
        if m:
            return template.format(**m.groupdict())
    return None


def reference_name(name: str) -> str:
    """OpenSDI's name of diffzoo's tensor ``name`` (the name itself when no rule knows it)."""
    return _rename(name, _BACKWARD) or name


def from_reference(state: Mapping[str, Any], expected: Iterable[str] | None = None) -> dict[str, Any]:
    """``state`` (OpenSDI's MaskCLIP ``state_dict``; a checkpoint's ``'model'``) under
    diffzoo's names.  ``expected``: the names the target model has (its ``state_dict``
    keys); then a missing one is an error too.  Strict: every error names the tensors."""
    out: dict[str, Any] = {}
    unknown: list[str] = []
    for name, tensor in state.items():
        mine = _rename(name, _FORWARD)
        if mine is None:
            unknown.append(name)
            continue
        if mine in out:
            raise ModelError(f"OpenSDI state: {name} and another tensor both map to {mine}")
        out[mine] = tensor
    lacking = missing_reference(state)
    found = [("missing tensor(s)", lacking), ("unexpected tensor(s)", unknown)]
    if expected is not None:
        wanted = set(expected)
        missing = [reference_name(k) for k in wanted - set(out) if reference_name(k) not in lacking]
        extra = [reference_name(k) for k in set(out) - wanted]
        found += [("missing tensor(s)", missing), ("tensor(s) the model does not have", extra)]
    problems = [f"{what} {name_some(sorted(names), 5)}" for what, names in found if names]
    if problems:
        raise ModelError(f"the OpenSDI MaskCLIP state does not fit: {'; '.join(problems)}")
    return out


def convert(state: dict[str, Any], card: Any) -> dict[str, Any]:
    """A release converter (``Release.convert``): ``state`` under the keys of the checkpoint the
    detector of ``card`` saves.  A card with pretrained weights saves the trained part alone
    (CLIP is the card's own, which an OpenSDI run keeps frozen), so ``clip.*`` is dropped and
    ``learned.`` stripped; a card without them (tiny, random CLIP) saves the whole network."""
    mapped = from_reference(state)
    if not card.weights:
        return mapped
    return {k[len("learned."):]: v for k, v in mapped.items() if k.startswith("learned.")}
