"""The adapter: an IMDL-BenCo model as a diffzoo Detector.

IMDL-BenCo's models take one dict (``image`` ImageNet-normalised at their
input size, ``mask`` float 0/1, ``edge_mask``, ``label``, ``shape``) and
return one (``backward_loss``, ``pred_mask`` probabilities, ``pred_label``).
:class:`BencoNet` makes that dict from diffzoo's images (RGB in [0, 1], any
size) and label maps, by the model's own input rule: ``resize`` to its input
size, or ``pad`` (zero padding at the bottom and right, as IMDL-BenCo's
``PadIfNeeded(position='top_left')``; an image larger than the input is first
scaled down to fit, keeping its aspect).  The probabilities come back at the
image's size (the padding cut off, or resized back).  Training runs in
diffzoo's shared loop (``train_loop(..., with_targets=True)``: seeding,
resume, AMP, torchrun, progress) on each model's own ``backward_loss``.

Upstream faults are not inherited silently (specs.py lists them per model):
SPAN's last layers, built anew inside every forward, are built once and
trained; ManTra-Net, which ends in a sigmoid, is trained with binary
cross-entropy on its probability instead of a logits loss on it; and a model
whose forward rewrites its own weights (ManTra-Net's, SPAN's Bayar filter) has
them restored after each prediction, so that predicting is repeatable.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.plugin import (
    BINARY,
    IGNORE_INDEX,
    ConfigError,
    CropDataset,
    DetectionOutput,
    DetectorBuild,
    DetectorCard,
    ModelError,
    Report,
    TorchDetector,
    TrainConfig,
    TrainData,
    WeightsUnavailableError,
    built_from,
    hub_offline,
    make_loader,
    placed_weights,
    train_loop,
    url_weights,
)
from diffzoo.plugins.benco.catnet import catnet_inputs
from diffzoo.plugins.benco.specs import INSTALL, SPECS, Spec, WeightFile, installed

log = logging.getLogger(__name__)

SPEC = {spec.key: spec for spec in SPECS}
EDGE_WIDTH = 7
"""edge_mask width of every demo script (--edge_mask_width 7 -> EdgeMaskGenerator(7))."""
MUTATING = frozenset({"mantra-net", "span"})
"""Models whose forward rewrites their own weights (the Bayar filter)."""


def benco_class(spec: Spec) -> type:
    """The model class from IMDL-BenCo, or one line saying how to install it."""
    if not installed():
        raise ModelError(f"benco.{spec.key} needs IMDL-BenCo, which is not installed: run `{INSTALL}` "
                         "(docs/detectors.md, IMDL-BenCo's localizers)")
    with quiet():
        return getattr(importlib.import_module(spec.module), spec.cls)


@contextlib.contextmanager
def quiet():
    """IMDL-BenCo prints as it builds ('load pretrained weights ...'): into the debug log instead."""
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        yield
    if buffer.getvalue().strip():
        log.debug("IMDL-BenCo: %s", buffer.getvalue().strip())


def package_file(relative: str) -> str:
    """A file shipped inside the IMDL-BenCo package (its yaml configs), as an absolute path."""
    import IMDLBenCo

    return str(Path(IMDLBenCo.__file__).parent.parent / relative)


def weight_file(card: DetectorCard, weights: WeightFile) -> Path:
    """The local, hash-checked file a constructor argument loads: downloaded into the torch
    hub cache when it has a URL, else put by hand in ``$DIFFZOO_CACHE/weights/benco/``."""
    if weights.url is not None:
        return url_weights(card, weights.url, label=weights.name, detail=weights.source)
    return placed_weights(card, weights.name, weights.source)


def construct(card: DetectorCard, pretrained: bool) -> nn.Module:
    """IMDL-BenCo's own model of ``card``, as its constructor builds it: the card's arguments,
    its weight files (the required ones always, the others when ``pretrained``)."""
    card.check_pretrained(pretrained)
    spec = SPEC[card.arch["benco"]]
    if spec.needs_cuda and not torch.cuda.is_available():
        raise ModelError(f"{card.name}: IMDL-BenCo's {spec.title} runs on CUDA only (its constructor calls "
                         ".cuda()); run it on a machine with a GPU (--device cuda)")
    cls = benco_class(spec)
    kwargs = dict(card.arch["kwargs"])
    for key in ("cfg_file", "config_path"):
        if key in kwargs:
            kwargs[key] = package_file(kwargs[key])
    if spec.key == "pscc-net":
        kwargs.setdefault("pretrain_path", "")  # its default None raises TypeError; '' = random weights
    if spec.key in ("mantra-net", "span"):
        kwargs["device"] = torch.device("cpu")  # else baked in as cuda-if-available at import
    if spec.key == "mesorch":
        if pretrained and hub_offline():
            raise WeightsUnavailableError(f"detector {card.name}", "timm/convnext_tiny.in12k_ft_in1k",
                                          "ConvNeXt-Tiny (timm convnext_tiny); or train from scratch with "
                                          "--no-pretrained")
        kwargs["conv_pretrain"] = pretrained
    resnet = None
    with built_from():  # each file's first use is recorded once IMDL-BenCo's constructor has read it
        for weights in spec.weights:
            if spec.key == "mvss-net":  # its constructor fetches the ResNet-50 itself, through torch.hub's cache
                resnet = weight_file(card, weights) if pretrained else None
            elif weights.required or pretrained:
                kwargs[weights.arg] = str(weight_file(card, weights))
        with quiet(), _no_resnet_download(spec, resnet is None):
            return cls(**kwargs)


@contextlib.contextmanager
def _no_resnet_download(spec: Spec, random: bool):
    """MVSS-Net's constructor always fetches ImageNet ResNet-50 weights; for random weights
    (--no-pretrained) it gets none, so nothing is downloaded."""
    if spec.key != "mvss-net" or not random:
        yield
        return
    module = importlib.import_module(spec.module)
    original = module.model_zoo.load_url
    module.model_zoo.load_url = lambda *args, **kwargs: {}
    try:
        yield
    finally:
        module.model_zoo.load_url = original


class _SpanHead(nn.Module):
    """SPAN's last layers (32 -> 16 -> 8 -> 4 -> 1, 5 x 5, ReLU between), as IMDL-BenCo's
    ``Last_Layer_0725`` defines them, but built once: registered, trained and saved."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(32, 16, 5, padding=2), nn.ReLU(), nn.Conv2d(16, 8, 5, padding=2), nn.ReLU(),
            nn.Conv2d(8, 4, 5, padding=2), nn.ReLU(), nn.Conv2d(4, 1, 5, padding=2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def edge_mask(mask: torch.Tensor, width: int = EDGE_WIDTH) -> torch.Tensor:
    """IMDL-BenCo's ``EdgeMaskGenerator(width)`` (transforms/edge_mask_generator.py) in torch on
    B x 1 x H x W masks: the pixels where the mask and its complement, each dilated by a
    cross-shaped kernel (zero padding), are both 1."""
    kernel = torch.zeros(1, 1, width, width, dtype=mask.dtype, device=mask.device)
    kernel[0, 0, width // 2, :] = 1
    kernel[0, 0, :, width // 2] = 1

    def dilate(m: torch.Tensor) -> torch.Tensor:
        return (F.conv2d(m, kernel, padding=width // 2) > 0).to(mask.dtype)

    return ((1 - (dilate(1 - mask) - dilate(mask)).abs()) > 0).to(mask.dtype)


class BencoNet(nn.Module):
    """An IMDL-BenCo model behind diffzoo's inputs: ``forward(images, targets=None)`` -> its dict.

    ``images``: B x 3 x H x W in [0, 1]; ``targets``: B x H x W label maps (0 unedited, 1
    edited, 255 ignore, read as unedited: IMDL-BenCo has no ignore value) or None.
    """

    def __init__(self, model: nn.Module, spec: Spec, card: DetectorCard):
        super().__init__()
        self.model, self.spec, self.size, self.rule = model, spec, card.input_size, card.arch["input_rule"]
        self.register_buffer("mean", torch.tensor(card.mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(card.std).view(1, 3, 1, 1), persistent=False)

    def placement(self, h: int, w: int) -> tuple[int, int]:
        """The (height, width) an H x W image takes inside the model's square input."""
        if self.rule == "resize":
            return self.size, self.size
        scale = min(1.0, self.size / max(h, w))  # pad; an image larger than the input is scaled down first
        return max(1, round(h * scale)), max(1, round(w * scale))

    def _place(self, x: torch.Tensor, mode: str) -> torch.Tensor:
        h, w = self.placement(*x.shape[-2:])
        if (h, w) != tuple(x.shape[-2:]):
            x = F.interpolate(x, size=(h, w), mode=mode, **({"align_corners": False} if mode == "bilinear" else {}))
        return F.pad(x, (0, self.size - w, 0, self.size - h)) if (h, w) != (self.size, self.size) else x

    def inputs(self, images: torch.Tensor, targets: torch.Tensor | None) -> dict[str, torch.Tensor]:
        """IMDL-BenCo's data dict for ``images`` (and their ``targets``)."""
        b, _, h, w = images.shape
        image = (self._place(images.float(), "bilinear") - self.mean) / self.std
        if targets is None:
            mask = torch.zeros(b, 1, self.size, self.size, device=images.device)
        else:
            edited = (targets == 1) & (targets != IGNORE_INDEX)
            mask = self._place(edited.float().unsqueeze(1), "nearest")
        out = self.spec.out_size
        if out is not None and out != self.size:  # its loss compares a fixed-size head with the mask
            mask = F.interpolate(mask, size=(out, out), mode="nearest")
        shape = torch.tensor([self.placement(h, w)] * b, device=images.device)
        data = {"image": image, "mask": mask, "edge_mask": edge_mask(mask), "label": mask.flatten(1).amax(1).long(),
                "shape": shape}
        if self.spec.key == "cat-net":  # 0..255 pixels, JPEG DCT coefficients and quantisation tables (catnet.py)
            data.update(catnet_inputs(self._place(images.float(), "bilinear")))
        return data

    def forward(self, images: torch.Tensor, targets: torch.Tensor | None = None) -> dict[str, Any]:
        data = self.inputs(images, targets)
        out = self.model(**data)
        if self.spec.key == "mantra-net" and targets is not None:  # it ends in a sigmoid: BCE on the probability
            out["backward_loss"] = F.binary_cross_entropy(out["pred_mask"].float().clamp(1e-6, 1 - 1e-6),
                                                          data["mask"])
        return out

    def probabilities(self, pred_mask: torch.Tensor, h: int, w: int) -> torch.Tensor:
        """The model's B x 1 x S x S probabilities at the images' H x W (padding cut off)."""
        if pred_mask.shape[-2:] != (self.size, self.size):  # a fixed-size head (Mesorch: 512)
            pred_mask = F.interpolate(pred_mask, size=(self.size, self.size), mode="bilinear", align_corners=False)
        ph, pw = self.placement(h, w)
        pred_mask = pred_mask[..., :ph, :pw]
        if (ph, pw) != (h, w):
            pred_mask = F.interpolate(pred_mask, size=(h, w), mode="bilinear", align_corners=False)
        return pred_mask.float().clamp(0, 1)  # CAT-Net's bicubic upsampling can overshoot


class BencoDetector(TorchDetector):
    """``benco.<model>``: binary localization by an IMDL-BenCo model (docs/detectors.md).

    ``model`` is the :class:`BencoNet`; a checkpoint holds IMDL-BenCo's own model inside it."""

    model: BencoNet

    @staticmethod
    def weights_read_always(card: DetectorCard) -> tuple[str, ...]:
        """The files (as ``card.weights`` names them) its constructor reads whatever ``pretrained`` says,
        which a plan looks for under --no-pretrained too: the required ones, but MVSS-Net's ResNet-50,
        kept from its constructor for random weights."""
        spec = SPEC[card.arch["benco"]]
        return tuple(w.url or w.name for w in spec.weights if w.required and spec.key != "mvss-net")

    def __init__(self, build: DetectorBuild) -> None:
        super().__init__(build)
        card = self.card
        if self.task != "binary":
            raise ConfigError(f"{card.name} predicts one 'edited' channel: it serves the binary task and image-level "
                              f"detection from its mask, not the {self.task} task")
        self.label_space, self.spec = BINARY, SPEC[card.arch["benco"]]
        model = construct(card, self.pretrained)
        if self.spec.key == "span":  # the fix of specs.py: SPAN's head built once
            model.last_layer = _SpanHead()  # replaces the bound Last_Layer_0725
        self.model = BencoNet(model, self.spec, card)

    def to(self, device: str | torch.device) -> BencoDetector:
        super().to(device)
        if hasattr(self.model.model, "device"):  # ManTra-Net and SPAN read their own attribute
            self.model.model.device = self.device
        return self

    @torch.no_grad()
    def predict(self, images: torch.Tensor) -> DetectionOutput:
        self.model.eval()
        images = images.to(self.device, torch.float32)
        with self._weights_kept():
            out = self.model(images)
        score = out.get("pred_label") if self.spec.has_label else None
        return DetectionOutput(mask_probs=self.model.probabilities(out["pred_mask"], *images.shape[-2:]),
                               image_score=None if score is None else score.float().reshape(-1).clamp(0, 1))

    @contextlib.contextmanager
    def _weights_kept(self):
        """Predicting leaves the weights as they were (see MUTATING)."""
        if self.spec.key not in MUTATING:
            yield
            return
        saved = {k: v.clone() for k, v in self.model.model.state_dict().items()}
        try:
            yield
        finally:
            self.model.model.load_state_dict(saved)

    def fit(self, train: TrainData, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        """diffzoo's shared loop on the model's own ``backward_loss``; its
        ``visual_loss`` scalars are logged as the loss terms."""
        return fit_own_loss(self, self.model.model, benco_loss, train, config, progress)

    def saved_module(self) -> nn.Module:
        return self.model.model

    def checkpoint_meta(self) -> dict[str, Any]:
        return {**super().checkpoint_meta(), "benco": {"model": self.spec.cls, "version": "0.1.45"}}


def fit_own_loss(det: TorchDetector, trained: nn.Module, loss: Any, train: TrainData, config: TrainConfig,
                 progress: Report | None) -> dict[str, Any]:
    """diffzoo's shared loop on random binary crops for ``det``, whose network computes its own
    loss from the targets (``loss`` reads it and its terms off the output); the parameters of
    ``trained`` in AdamW groups as timm's create_optimizer makes them: 1-D ones and biases undecayed."""
    torch.manual_seed(config.seed)  # dropout and drop-path draw from it, as in the segmenters' fit
    loader = make_loader(CropDataset(train.dataset, train.ids, "binary", config), config)
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, p in trained.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim <= 1 or name.endswith(".bias") else decay).append(p)
    groups = [{"params": decay, "lr": config.lr, "name": "decay"},
              {"params": no_decay, "lr": config.lr, "weight_decay": 0.0, "name": "no_decay"}]
    return train_loop(det.model, loader, loss, groups, config, det.device, progress, train.hooks,
                      data_name=train.dataset.name, with_targets=True)


def benco_loss(out: dict[str, Any], targets: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """An IMDL-BenCo model's ``backward_loss``, with the scalars of its ``visual_loss``
    (e.g. ``seg_loss``, ``edge_loss``) as the terms the training log shows."""
    terms = out.get("visual_loss") or {}
    return out["backward_loss"], {str(k): v for k, v in terms.items() if torch.is_tensor(v) and v.numel() == 1}

