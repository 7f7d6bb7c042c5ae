"""The authors' released DINOv3-IML files, mapped onto this detector's network.

A released file is what IMDL-BenCo saves: ``{"model": state_dict, ...}`` (the
authors' ``from_pretrained`` takes ``state.get("model", state)``, so a bare
state dict is accepted too), the state dict of their whole model:

- ``backbone.*``: the DINOv3 hub ViT in its original naming (``cls_token``,
  ``storage_tokens``, ``mask_token``, ``patch_embed.proj``,
  ``rope_embed.periods``, ``blocks.N.{norm1, attn.qkv, attn.proj, ls1.gamma,
  norm2, mlp.fc1, mlp.fc2, ls2.gamma}``, ``norm``), where PEFT's
  ``inject_adapter_in_model`` has wrapped every ``attn.qkv``: its weights
  under ``attn.qkv.base_layer.{weight, bias, bias_mask}`` and the adapter as
  ``attn.qkv.lora_A.default.weight`` (r x d) and ``attn.qkv.lora_B.default.weight``
  (3d x r);
- ``seg_head.{0,3,6}`` (convs) and ``seg_head.{1,4}`` (BatchNorms, with their
  running statistics).

:func:`from_release` returns the same weights under the keys of
:class:`~diffzoo.plugins.dinov3iml.model.Dinov3Iml`'s ``state_dict()``: the
fused q/k/v weight, masked bias and LoRA up matrix are cut into thirds, the
shared LoRA down matrix goes to ``q_proj`` (which k and v read), the RoPE
periods are checked against the card (transformers recomputes them).  It is
strict: a missing or unexpected key, a tensor of the wrong shape, or a key
bias that is not masked to zero is a ModelError naming it.
"""

from __future__ import annotations

from typing import Any

import torch

from diffzoo.plugin import DetectorCard, ModelError, describe_mismatch
from diffzoo.plugins.dinov3iml.model import ADAPTER

_SHOWN = 8
"""Keys named in one message at most; the rest are counted."""


def _block_shapes(d: int, mlp: int, r: int) -> dict[str, tuple[int, ...]]:
    qkv = "attn.qkv."
    return {
        "norm1.weight": (d,), "norm1.bias": (d,),
        f"{qkv}base_layer.weight": (3 * d, d), f"{qkv}base_layer.bias": (3 * d,),
        f"{qkv}base_layer.bias_mask": (3 * d,),
        f"{qkv}lora_A.{ADAPTER}.weight": (r, d), f"{qkv}lora_B.{ADAPTER}.weight": (3 * d, r),
        "attn.proj.weight": (d, d), "attn.proj.bias": (d,), "ls1.gamma": (d,),
        "norm2.weight": (d,), "norm2.bias": (d,),
        "mlp.fc1.weight": (mlp, d), "mlp.fc1.bias": (mlp,), "mlp.fc2.weight": (d, mlp), "mlp.fc2.bias": (d,),
        "ls2.gamma": (d,),
    }


def release_shapes(card: DetectorCard) -> dict[str, tuple[int, ...]]:
    """Every key a released file for ``card`` holds, with its shape."""
    arch = card.arch
    d, mlp, r, p = arch["hidden_size"], arch["intermediate_size"], arch["lora_rank"], arch["patch_size"]
    head_dim = d // arch["num_attention_heads"]
    shapes: dict[str, tuple[int, ...]] = {
        "backbone.cls_token": (1, 1, d), "backbone.storage_tokens": (1, arch["num_register_tokens"], d),
        "backbone.mask_token": (1, d), "backbone.patch_embed.proj.weight": (d, 3, p, p),
        "backbone.patch_embed.proj.bias": (d,), "backbone.rope_embed.periods": (head_dim // 4,),
        "backbone.norm.weight": (d,), "backbone.norm.bias": (d,),
    }
    for i in range(arch["num_hidden_layers"]):
        shapes.update({f"backbone.blocks.{i}.{k}": s for k, s in _block_shapes(d, mlp, r).items()})
    for i, (cin, cout) in {0: (d, d // 2), 3: (d // 2, d // 4), 6: (d // 4, 1)}.items():
        k = 1 if i == 6 else 3
        shapes.update({f"seg_head.{i}.weight": (cout, cin, k, k), f"seg_head.{i}.bias": (cout,)})
    for i, c in {1: d // 2, 4: d // 4}.items():
        shapes.update({f"seg_head.{i}.{k}": (c,) for k in ("weight", "bias", "running_mean", "running_var")})
        shapes[f"seg_head.{i}.num_batches_tracked"] = ()
    return shapes


def from_release(state: dict[str, Any], card: DetectorCard) -> dict[str, torch.Tensor]:
    """``card``'s network state dict from a released DINOv3-IML file's flat tensors (see the module
    docstring; the release reader takes off the file's ``{"model": ...}`` wrapper)."""
    problem = describe_mismatch(release_shapes(card), state, limit=_SHOWN)
    if problem:
        raise ModelError(f"not a DINOv3-IML release for {card.name}: {problem}")

    arch = card.arch
    d = arch["hidden_size"]
    head_dim = d // arch["num_attention_heads"]
    periods = arch["rope_theta"] ** (2 * torch.arange(head_dim // 4, dtype=torch.float32) / (head_dim // 2))
    given = state["backbone.rope_embed.periods"]
    rounding = torch.finfo(given.dtype).eps if given.is_floating_point() else 0.0  # a float16 release's periods
    if not torch.allclose(given.float(), periods, rtol=max(1e-5, rounding), atol=0):
        raise ModelError(f"backbone.rope_embed.periods of the release are not the RoPE periods of base "
                         f"{arch['rope_theta']} that {card.name} computes")

    out: dict[str, torch.Tensor] = {
        "backbone.embeddings.cls_token": state["backbone.cls_token"],
        "backbone.embeddings.register_tokens": state["backbone.storage_tokens"],
        "backbone.embeddings.mask_token": state["backbone.mask_token"].reshape(1, 1, d),
        "backbone.embeddings.patch_embeddings.weight": state["backbone.patch_embed.proj.weight"],
        "backbone.embeddings.patch_embeddings.bias": state["backbone.patch_embed.proj.bias"],
        "backbone.norm.weight": state["backbone.norm.weight"],
        "backbone.norm.bias": state["backbone.norm.bias"],
    }
    out.update({k: v for k, v in state.items() if k.startswith("seg_head.")})
    renamed = {"norm1.weight": "norm1.weight", "norm1.bias": "norm1.bias", "norm2.weight": "norm2.weight",
               "norm2.bias": "norm2.bias", "attn.proj.weight": "attention.o_proj.weight",
               "attn.proj.bias": "attention.o_proj.bias", "ls1.gamma": "layer_scale1.lambda1",
               "ls2.gamma": "layer_scale2.lambda1", "mlp.fc1.weight": "mlp.up_proj.weight",
               "mlp.fc1.bias": "mlp.up_proj.bias", "mlp.fc2.weight": "mlp.down_proj.weight",
               "mlp.fc2.bias": "mlp.down_proj.bias"}
    for i in range(arch["num_hidden_layers"]):
        src, dst = f"backbone.blocks.{i}.", f"backbone.model.layer.{i}."
        out.update({dst + theirs: state[src + ours] for ours, theirs in renamed.items()})
        qkv = src + "attn.qkv."
        # the reference adds bias * bias_mask; the mask zeroes the key third, which transformers has no bias for
        bias = state[qkv + "base_layer.bias"] * state[qkv + "base_layer.bias_mask"].to(state[qkv + "base_layer.bias"])
        if not torch.isfinite(bias).all() or bias[d:2 * d].count_nonzero():
            raise ModelError(f"{qkv}base_layer.bias_mask of the release does not mask exactly the key bias "
                             f"to zero; {card.name} has no key bias")
        weights = state[qkv + "base_layer.weight"].split(d)
        ups = state[qkv + f"lora_B.{ADAPTER}.weight"].split(d)
        for j, name in enumerate(("q_proj", "k_proj", "v_proj")):
            proj = f"{dst}attention.{name}."
            out[proj + "base_layer.weight"] = weights[j]
            out[proj + f"lora_B.{ADAPTER}.weight"] = ups[j]
        out[dst + "attention.q_proj.base_layer.bias"] = bias[:d]
        out[dst + "attention.v_proj.base_layer.bias"] = bias[2 * d:]
        out[dst + f"attention.q_proj.lora_A.{ADAPTER}.weight"] = state[qkv + f"lora_A.{ADAPTER}.weight"]
    return {k: v.contiguous() for k, v in out.items()}
