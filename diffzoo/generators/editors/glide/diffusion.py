"""GLIDE's Gaussian diffusion: noise schedules, timestep respacing, ancestral sampling.

Follows openai/glide-text2im (``gaussian_diffusion.py``, ``respace.py``):
1000 training steps with the cosine (``squaredcos_cap_v2``, base) or linear
(upsampler) beta schedule; a respaced schedule keeps a subset of steps
(``"100"``, ``"fast27"``, ``"ddim50"``, ``"10,10,3,2,2"``) and recomputes betas
from the kept cumulative alphas; the model is called with the original step
index.  The model predicts eps and a learned variance (interpolated between
the posterior variance and beta in log space).  ``known``/``keep`` implement
the inpainting notebook's ``denoised_fn``: the x0 prediction is replaced by the
source wherever ``keep`` is 1 before clipping, at every step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from diffzoo.harness.core.errors import ConfigError

Predict = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
"""(x_t, original step index tensor) -> (eps, variance values in [-1, 1])."""


def beta_schedule(name: str, steps: int) -> np.ndarray:
    if name == "linear":
        scale = 1000 / steps
        return np.linspace(scale * 1e-4, scale * 0.02, steps, dtype=np.float64)
    if name == "squaredcos_cap_v2":
        def alpha_bar(t: float) -> float:
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2

        return np.array([min(1 - alpha_bar((i + 1) / steps) / alpha_bar(i / steps), 0.999) for i in range(steps)])
    raise ConfigError(f"unknown GLIDE noise schedule {name!r} (linear, squaredcos_cap_v2)")


def space_timesteps(num_steps: int, spec: str) -> list[int]:
    """The original step indices a respacing ``spec`` keeps (sorted)."""
    if spec == "fast27":  # upstream: drop the noisiest step, which gives artifacts, for step T-3
        kept = set(space_timesteps(num_steps, "10,10,3,2,2")) - {num_steps - 1}
        return sorted(kept | {num_steps - 3})
    if spec.startswith("ddim"):
        want = int(spec[4:])
        for stride in range(1, num_steps):
            if len(range(0, num_steps, stride)) == want:
                return list(range(0, num_steps, stride))
        raise ConfigError(f"cannot take exactly {want} of {num_steps} steps with an integer stride")
    try:
        counts = [int(c) for c in spec.split(",")]
    except ValueError:
        raise ConfigError(f"bad timestep respacing {spec!r}: use e.g. '100', 'fast27', 'ddim50'") from None
    size, extra = divmod(num_steps, len(counts))
    kept, start = set(), 0
    for i, count in enumerate(counts):
        n = size + (1 if i < extra else 0)
        if not 0 < count <= n:
            raise ConfigError(f"cannot take {count} steps from a section of {n} (respacing {spec!r})")
        stride, pos = ((n - 1) / (count - 1) if count > 1 else 1.0), 0.0
        for _ in range(count):  # accumulate the float stride exactly as upstream does
            kept.add(start + round(pos))
            pos += stride
        start += n
    return sorted(kept)


@dataclass(frozen=True)
class Schedule:
    """A (respaced) diffusion schedule: per kept step, the coefficients sampling needs."""

    timestep_map: np.ndarray  # kept step -> original step index
    betas: np.ndarray
    alphas_cumprod: np.ndarray
    posterior_log_variance: np.ndarray  # clipped at step 0 as upstream
    posterior_coef_x0: np.ndarray
    posterior_coef_xt: np.ndarray

    @classmethod
    def make(cls, name: str, respacing: str, num_steps: int = 1000) -> Schedule:
        full = np.cumprod(1.0 - beta_schedule(name, num_steps))
        kept = space_timesteps(num_steps, respacing)
        acp = full[kept]
        prev = np.append(1.0, acp[:-1])
        betas = 1.0 - acp / prev
        post_var = betas * (1.0 - prev) / (1.0 - acp)
        return cls(
            timestep_map=np.asarray(kept),
            betas=betas,
            alphas_cumprod=acp,
            posterior_log_variance=np.log(np.append(post_var[1], post_var[1:])),
            posterior_coef_x0=betas * np.sqrt(prev) / (1.0 - acp),
            posterior_coef_xt=(1.0 - prev) * np.sqrt(1.0 - betas) / (1.0 - acp),
        )

    def __len__(self) -> int:
        return len(self.timestep_map)


def sample(
    predict: Predict,
    schedule: Schedule,
    noise: torch.Tensor,
    known: torch.Tensor,
    keep: torch.Tensor,
    generator: torch.Generator,
) -> torch.Tensor:
    """Ancestral sampling from ``noise`` down to x0 in [-1, 1], keeping ``known`` where ``keep`` is 1.

    Fresh noise for each step comes from ``generator`` (a CPU generator, so the
    result depends only on the seed, not on the device).
    """
    x = noise
    for i in reversed(range(len(schedule))):
        t = torch.full((x.shape[0],), int(schedule.timestep_map[i]), device=x.device, dtype=torch.long)
        eps, var = predict(x, t)
        acp = float(schedule.alphas_cumprod[i])
        x0 = math.sqrt(1.0 / acp) * x - math.sqrt(1.0 / acp - 1.0) * eps
        x0 = (x0 * (1 - keep) + known * keep).clamp(-1, 1)
        mean = float(schedule.posterior_coef_x0[i]) * x0 + float(schedule.posterior_coef_xt[i]) * x
        if i == 0:
            return mean
        frac = (var + 1) / 2
        log_var = frac * math.log(schedule.betas[i]) + (1 - frac) * float(schedule.posterior_log_variance[i])
        z = torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
        x = mean + torch.exp(0.5 * log_var) * z
    return x  # pragma: no cover - empty schedule is rejected by space_timesteps
