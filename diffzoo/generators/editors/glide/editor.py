"""``GlideEditor``: GLIDE text-guided inpainting as a diffzoo mask editor.

Two stages, as in the official inpainting notebook: the base model samples a
64 px image with classifier-free guidance (cond + empty-prompt batch), the
inpainting upsampler turns it into 256 px (no guidance, start noise scaled by
the upsample temperature).  At every step of both, the x0 prediction is
replaced by the source image wherever the pixel is kept.  The edit mask is
reduced to the 64 px grid with "any edited pixel" (so no edited pixel falls in
a kept cell) and nearest-upsampled to 256 px, as upstream.  The 256 px result
is resized to the input size and the unmasked pixels are composited back from
the input, so outside the mask the output equals the input exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffzoo.generators.editors.diffusers_editor import (
    CardPipeline,
    _check_inputs,
    composite,
    edit_metadata,
    resolve_dtype,
)
from diffzoo.harness.core.errors import ModelError
from diffzoo.harness.core.protocols import EditResult, Generator

FILES = ("base", "upsampler", "encoder_json", "vocab_bpe")
"""The official files a GLIDE card's ``weights`` option names by these keys."""


class GlideEditor(CardPipeline, Generator):
    """A GLIDE inpainting editor described by ``card`` (``glide.inpaint`` or ``glide.tiny``);
    its ``pipeline`` is (base model, upsampler model, tokenizer)."""

    def check_weights(self) -> None:
        """Its official files are kept here, or not offline (downloaded at the build); a tiny card has none."""
        from diffzoo.generators.editors.glide.weights import missing

        if not self.card.tiny:
            missing([self.card.options["weights"][k] for k in FILES], f"generator {self.card.name!r}")

    def _build(self) -> tuple[Any, Any, Any]:
        from diffzoo.generators.editors.glide.model import GlideConfig, GlideUNet
        from diffzoo.generators.editors.glide.tokenizer import GlideTokenizer
        from diffzoo.generators.editors.glide.weights import fetch, load_model, load_state_dict
        from diffzoo.generators.tiny.components import seeded

        opts, what = self.card.options, f"generator {self.card.name!r}"
        base_cfg = GlideConfig.from_dict(opts["base"]["model"])
        up_cfg = GlideConfig.from_dict(opts["upsampler"]["model"])
        files = opts["weights"]
        if self.card.tiny:
            seed = int(files.get("seed", 0))
            base, up = seeded(seed, lambda: GlideUNet(base_cfg)), seeded(seed + 1, lambda: GlideUNet(up_cfg))
            tokenizer = GlideTokenizer.tiny()
        else:
            paths = dict(zip(FILES, fetch([files[k] for k in FILES], what)))
            base = load_model(base_cfg, load_state_dict(paths["base"], files["base"]), f"{what} base")
            up = load_model(up_cfg, load_state_dict(paths["upsampler"], files["upsampler"]), f"{what} upsampler")
            tokenizer = GlideTokenizer.from_files(paths["encoder_json"], paths["vocab_bpe"])
        for cfg in (base_cfg, up_cfg):
            if cfg.n_vocab != tokenizer.n_vocab:
                raise ModelError(f"{what}: model vocabulary {cfg.n_vocab} != tokenizer {tokenizer.n_vocab}")
        dtype = resolve_dtype(self.card, self.device, self.dtype)
        return base.to(self.device, dtype).eval(), up.to(self.device, dtype).eval(), tokenizer

    def _text(self, model: Any, tokenizer: Any, prompts: list[str]) -> tuple[Any, Any]:
        import torch

        ctx = model.cfg.text_ctx
        pairs = [tokenizer.padded(tokenizer.encode(p), ctx) for p in prompts]
        tokens = torch.tensor([t for t, _ in pairs], device=self.device)
        mask = torch.tensor([m for _, m in pairs], dtype=torch.bool, device=self.device)
        return model.encode_text(tokens, mask)

    def edit(self, image: np.ndarray, mask: np.ndarray | None, prompt: str, seed: int) -> EditResult:
        """Inpaint ``mask`` of ``image`` following ``prompt``; pixels outside stay identical."""
        import torch
        import torch.nn.functional as F
        from PIL import Image

        from diffzoo.generators.editors.glide.diffusion import Schedule, sample

        mask = _check_inputs(image, mask)
        base, up, tokenizer = self.pipeline
        bopts, uopts = self.card.options["base"], self.card.options["upsampler"]
        lo, hi = base.cfg.image_size, up.cfg.image_size
        dev = self.device

        def source(size: int) -> torch.Tensor:  # bicubic resize, [-1, 1], 1 x 3 x size x size
            pil = Image.fromarray(image).resize((size, size), Image.Resampling.BICUBIC)
            return (torch.from_numpy(np.array(pil)).permute(2, 0, 1)[None].float() / 127.5 - 1).to(dev)

        edit_lo = F.adaptive_max_pool2d(torch.from_numpy(mask)[None, None].float(), lo)
        keep_lo = (1 - edit_lo).to(dev)
        keep_hi = F.interpolate(keep_lo, (hi, hi), mode="nearest")
        src_lo, src_hi = source(lo), source(hi)
        generator = torch.Generator(device="cpu").manual_seed(int(seed))
        scale = float(self.card.guidance_scale)

        with torch.inference_mode():
            text = self._text(base, tokenizer, [prompt, ""])  # cond, uncond

            def guided(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                out = base(torch.cat([x, x]), torch.cat([t, t]), text, src_lo, keep_lo)
                cond, uncond = out[:1, :3], out[1:, :3]
                return uncond + scale * (cond - uncond), out[:1, 3:]

            noise = torch.randn((1, 3, lo, lo), generator=generator).to(dev)
            low = sample(guided, Schedule.make(bopts["schedule"], str(self.card.steps)), noise,
                         src_lo * keep_lo, keep_lo, generator)
            low = ((low + 1) * 127.5).round() / 127.5 - 1  # quantised to 8 bit, as upstream
            text_up = self._text(up, tokenizer, [prompt])

            def upsample(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                out = up(x, t, text_up, src_hi, keep_hi, low_res=low)
                return out[:, :3], out[:, 3:]

            noise = torch.randn((1, 3, hi, hi), generator=generator).to(dev) * float(uopts["temperature"])
            high = self._finite(sample(upsample, Schedule.make(uopts["schedule"], str(uopts["respacing"])), noise,
                                       src_hi * keep_hi, keep_hi, generator))
        edited = ((high[0] + 1) * 127.5).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).cpu().numpy()
        metadata = {
            **edit_metadata(self.card, "native", prompt, seed, hi),
            "known_region": "x0 prediction replaced by the source outside the mask at every step",
            "upsample_respacing": str(uopts["respacing"]),
            "upsample_temperature": float(uopts["temperature"]),
            "strength": self.card.strength,
            "composited": True,
            "base_resolution": lo,
        }
        return EditResult(image=composite(image, edited, mask), changed=mask.copy(), metadata=metadata)
