"""Mask-blended latent inpainting for text-to-image pipelines without an inpaint class.

Blended latent diffusion (Avrahami et al., arXiv:2206.02779; the same scheme
diffusers' own 4-channel inpaint pipelines use): encode the image to latents
``z0``; after every denoising step replace the latents outside the mask by
``z0`` noised to the next timestep (``scheduler.add_noise``, or
``scale_noise`` for flow-matching schedulers), and by ``z0`` itself after the
last step.  The text-to-image pipeline runs unchanged through
``callback_on_step_end``, so its own prompt encoding, guidance and scheduler
are used.  The known region is not bit-exact after decoding (the VAE is
lossy); the editor composites the original pixels back afterwards.
"""

from __future__ import annotations

from typing import Any

from diffzoo.harness.core.errors import ModelError


def encode_latents(pipe: Any, image: Any) -> Any:
    """``(z - shift_factor) * scaling_factor`` of a PIL image, as the pipeline's decoder expects.

    Uses the mode of the VAE posterior (no sampling, so no RNG).  A float16 VAE
    that asks for upcasting (SDXL's, Kolors') encodes in float32.
    """
    import torch

    vae = pipe.vae
    pixels = pipe.image_processor.preprocess(image).to(device=vae.device)
    upcast = vae.dtype == torch.float16 and bool(getattr(vae.config, "force_upcast", False))
    if upcast:
        vae.to(dtype=torch.float32)
    try:
        posterior = vae.encode(pixels.to(vae.dtype)).latent_dist
        z = posterior.mode()
    finally:
        if upcast:
            vae.to(dtype=torch.float16)
    shift = getattr(vae.config, "shift_factor", None) or 0.0
    return (z - shift) * vae.config.scaling_factor


def regenerate_mask(mask: Any, latent_hw: tuple[int, int]) -> Any:
    """1 where a latent cell must be generated: any of its pixels is masked (max-pool).

    Max-pooling rather than nearest sampling makes every masked pixel lie in a
    generated cell, so after compositing no masked pixel keeps a mere VAE
    reconstruction of the original.
    """
    import torch
    import torch.nn.functional as F

    m = torch.as_tensor(mask, dtype=torch.float32)[None, None]
    height, width = m.shape[-2:]
    lh, lw = latent_hw
    if height % lh or width % lw:
        raise ModelError(f"latent grid {lh}x{lw} does not divide the image {height}x{width}")
    return F.max_pool2d(m, kernel_size=(height // lh, width // lw))


def noised(scheduler: Any, z0: Any, noise: Any, timestep: Any) -> Any:
    """``z0`` moved to ``timestep`` by the scheduler's own forward process."""
    import torch

    t = torch.as_tensor(timestep).reshape(1).to(z0.device)
    if hasattr(scheduler, "scale_noise"):  # flow matching: (1 - sigma) z0 + sigma noise
        return scheduler.scale_noise(z0, t, noise)
    return scheduler.add_noise(z0, noise, t)


class LatentBlend:
    """``callback_on_step_end`` that keeps the latents outside the mask on ``z0``'s path.

    ``z0``: clean latents of the input; ``noise``: the tensor the pipeline
    starts from (pass it as ``latents=``); ``regen``: 1 x 1 x h x w, 1 where
    the latent is generated.
    """

    tensor_inputs = ["latents"]

    def __init__(self, z0: Any, noise: Any, regen: Any):
        self.z0 = z0
        self.noise = noise
        self.regen = regen.to(device=z0.device, dtype=z0.dtype)

    def __call__(self, pipe: Any, step: int, timestep: Any, callback_kwargs: dict[str, Any]) -> dict[str, Any]:
        latents = callback_kwargs["latents"]
        if latents.shape != self.z0.shape:
            raise ModelError(
                f"{type(pipe).__name__}: latents {tuple(latents.shape)} do not match the VAE latents "
                f"{tuple(self.z0.shape)}; latent blending needs unpacked (B, C, h, w) latents"
            )
        timesteps = pipe.scheduler.timesteps
        if step + 1 < len(timesteps):
            known = noised(pipe.scheduler, self.z0, self.noise, timesteps[step + 1])
        else:
            known = self.z0
        known = known.to(latents.dtype)
        return {"latents": self.regen * latents + (1.0 - self.regen) * known}
