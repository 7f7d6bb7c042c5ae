"""mmseg networks built from the configs shipped inside mmsegmentation.

The card names a config; :class:`MMSegDetector` loads it with mmengine,
adapts it to diffzoo (output channels, BN instead of SyncBN, no data
preprocessor, pretrained backbone loaded by diffzoo), builds it with mmseg's
``MODELS`` registry and wraps it as a module mapping normalised images to the
decode head's logits (1/4 or 1/8 of the input; the base class resizes) and,
in training, the auxiliary heads' logits with their loss weights.  mmseg and
mmcv are imported only when a model is built, so the cards list without them.
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from diffzoo.plugin import NO_PRETRAINED, DetectorCard, ModelError, SegmentationDetector, url_into

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "mmseg.* detectors need the optional MMSegmentation backend: pip install 'diffzoo[mmseg]' "
    "and run scripts/install-mmseg.sh (builds mmcv 2.1.0 with ops)"
)


def import_backend() -> Any:
    """The ``mmseg`` module with mmcv's compiled ops, or a ModelError saying how to install it."""
    try:
        import mmcv.ops  # noqa: F401  (an mmcv built without ops fails here)
        import mmseg
        from mmseg.utils import register_all_modules
    except Exception as exc:  # ImportError, or mmseg's mmcv version assertion
        raise ModelError(f"{INSTALL_HINT} ({type(exc).__name__}: {exc})") from exc
    register_all_modules(init_default_scope=False)
    return mmseg


def config_path(card: DetectorCard) -> Path:
    """The card's config file inside the installed mmseg (wheel: ``mmseg/.mim/configs``)."""
    mmseg = import_backend()
    package = Path(mmseg.__file__).parent
    for root in (package / ".mim" / "configs", package.parent / "configs"):  # wheel, source checkout
        if (root / card.arch["config"]).is_file():
            return root / card.arch["config"]
    raise ModelError(
        f"detector {card.name}: mmsegmentation {mmseg.__version__} at {package} has no config "
        f"{card.arch['config']} (diffzoo expects mmsegmentation {card.arch['mmsegmentation']})"
    )


def load_config(card: DetectorCard) -> Any:
    """The card's mmseg config (an mmengine Config), ``_base_`` files merged."""
    from mmengine.config import Config

    return Config.fromfile(str(config_path(card)))


@contextlib.contextmanager
def quiet_mmengine() -> Iterator[None]:
    """Keep mmengine's INFO logging (a line per initialised tensor) and mmseg's
    deprecation warnings out of diffzoo's output while a model is built."""
    from mmengine.logging import MMLogger

    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UserWarning, module=r"mmseg\.")
            yield
    finally:
        logger.setLevel(level)


def _sync_bn_to_bn(node: Any) -> None:
    """SyncBN -> BN everywhere in a config (one process; see docs/mmseg.md)."""
    if isinstance(node, dict):
        if node.get("type") == "SyncBN":
            node["type"] = "BN"
        for value in node.values():
            _sync_bn_to_bn(value)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _sync_bn_to_bn(value)


def backbone_checkpoint(model_cfg: Any) -> str | None:
    """The backbone's pretrained checkpoint named by a config's model dict."""
    if model_cfg.get("pretrained"):
        return model_cfg["pretrained"]
    init = model_cfg.backbone.get("init_cfg")
    if isinstance(init, dict) and init.get("type") == "Pretrained":
        return init["checkpoint"]
    return None


def checkpoint_url(source: str) -> str:
    """``open-mmlab://name`` -> its URL (mmengine's model table); URLs as they are."""
    if source.startswith("open-mmlab://"):
        from mmengine.runner.checkpoint import get_external_models

        name = source.removeprefix("open-mmlab://")
        urls = get_external_models()
        if name not in urls:
            raise ModelError(f"mmengine's model table has no {source!r}")
        return urls[name]
    if source.startswith(("https://", "http://")):
        return source
    raise ModelError(f"pretrained checkpoint {source!r} is not a URL or an open-mmlab:// name")


def load_pretrained_backbone(card: DetectorCard, backbone: nn.Module, source: str) -> None:
    """The backbone weights ``source`` names loaded into ``backbone``, from the torch hub cache or
    downloaded, hash-checked, read with ``weights_only=True`` and strictly (tensors the backbone
    has not, a classifier's, are left; see :func:`diffzoo.plugin.url_into`)."""
    def backbone_state(ckpt: dict[str, Any]) -> dict[str, Any]:  # mmengine's load_checkpoint drops these prefixes
        return {re.sub(r"^(module\.)?(backbone\.)?", "", k): v for k, v in ckpt.get("state_dict", ckpt).items()}

    url_into(card, backbone, checkpoint_url(source), label=source, state=backbone_state, others=True,
             detail=f"backbone of {card.arch['config']}; {NO_PRETRAINED}")


def segmentor_config(card: DetectorCard, cfg: Any, num_outputs: int, threshold: float) -> Any:
    """The config's ``model`` adapted to diffzoo (see the module docstring)."""
    model = cfg.model
    pre = model.get("data_preprocessor") or {}
    mean = [m / 255 for m in pre.get("mean", ())]
    std = [s / 255 for s in pre.get("std", ())]
    same = len(mean) == 3 and all(abs(a - b) < 1e-6 for a, b in zip([*mean, *std], [*card.mean, *card.std]))
    if not same or not pre.get("bgr_to_rgb"):
        raise ModelError(
            f"detector {card.name}: the config normalises with mean {pre.get('mean')} std {pre.get('std')} "
            f"(bgr_to_rgb={pre.get('bgr_to_rgb')}), not the card's RGB mean {card.mean} std {card.std} x 255"
        )
    model.data_preprocessor = None  # diffzoo's Normalized wrapper does it, on RGB in [0, 1]
    model.pretrained = None  # the pretrained backbone is loaded by load_pretrained_backbone
    model.backbone.init_cfg = None
    _sync_bn_to_bn(model)
    for head in [model.decode_head, *auxiliary_heads(model)]:
        if num_outputs == 1:  # mmseg's binary convention: 2 classes, one sigmoid channel
            weight = head.loss_decode.get("loss_weight", 1.0)
            head.update(num_classes=2, out_channels=1, threshold=threshold,
                        loss_decode=dict(type="CrossEntropyLoss", use_sigmoid=True, loss_weight=weight))
        else:
            head.update(num_classes=num_outputs, out_channels=None)
    return model


def auxiliary_heads(model_cfg: Any) -> list[Any]:
    """A config's auxiliary head configs (mmseg allows none, one or a list)."""
    aux = model_cfg.get("auxiliary_head")
    return [] if aux is None else list(aux) if isinstance(aux, (list, tuple)) else [aux]


def auxiliary_weights(model_cfg: Any) -> list[float]:
    """Each auxiliary head's ``loss_decode.loss_weight`` (one CrossEntropyLoss each)."""
    weights = []
    for head in auxiliary_heads(model_cfg):
        loss = head.get("loss_decode")
        if not isinstance(loss, dict) or loss.get("type") != "CrossEntropyLoss":
            raise ModelError(f"auxiliary head {head.get('type')}: diffzoo supports one CrossEntropyLoss, not {loss}")
        weights.append(float(loss.get("loss_weight", 1.0)))
    return weights


class MMSegLogits(nn.Module):
    """An mmseg EncoderDecoder as a module: normalised images -> decode-head logits.

    Eval: ``mode="tensor"``, mmseg's plain forward (backbone (+ neck) +
    decode head, no resizing or post-processing).  Training with auxiliary
    heads: ``(logits, [(aux_logits, weight), ...])``, every head's ``forward``
    on the same features, as ``EncoderDecoder.loss`` does (each head picks
    its input with its own ``in_index``); diffzoo's segmentation_loss adds
    ``weight *`` each auxiliary loss.
    """

    def __init__(self, segmentor: nn.Module, aux_weights: list[float]):
        super().__init__()
        self.segmentor = segmentor
        self.aux_weights = aux_weights

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, list[tuple[torch.Tensor, float]]]:
        if not (self.training and self.aux_weights):
            return self.segmentor(x, mode="tensor")
        feats = self.segmentor.extract_feat(x)
        aux = self.segmentor.auxiliary_head
        heads = list(aux) if isinstance(aux, nn.ModuleList) else [aux]
        return self.segmentor.decode_head.forward(feats), [
            (head.forward(feats), weight) for head, weight in zip(heads, self.aux_weights, strict=True)
        ]


class MMSegDetector(SegmentationDetector):
    """A segmenter whose network is built by mmseg from the card's config."""

    head_prefixes = ("decode_head", "auxiliary_head")  # mmengine's custom_keys "head" matches both

    @property
    def no_decay_keywords(self) -> tuple[str, ...]:  # per card: only SegFormer's paramwise_cfg has any
        return tuple(self.card.arch.get("no_decay_keywords", ()))

    @staticmethod
    def weights_url(source: str) -> str | None:
        """The URL an ``open-mmlab://`` name stands for, which a plan looks for in the torch hub cache; None
        for another source, or without mmengine (building the model then says what to install)."""
        try:
            return checkpoint_url(source) if source.startswith("open-mmlab://") else None
        except ImportError:
            return None

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        mmseg = import_backend()
        from mmseg.registry import MODELS

        if mmseg.__version__ != self.card.arch["mmsegmentation"]:
            log.warning("detector %s was written for mmsegmentation %s; %s is installed",
                        self.card.name, self.card.arch["mmsegmentation"], mmseg.__version__)
        cfg = load_config(self.card)
        source = backbone_checkpoint(cfg.model)
        if source != self.card.weights:
            raise ModelError(
                f"detector {self.card.name}: its card names backbone weights {self.card.weights!r}, "
                f"the installed config {self.card.arch['config']} names {source!r}"
            )
        self.card.check_pretrained(pretrained)
        model_cfg = segmentor_config(self.card, cfg, num_outputs, self.card.default_threshold)
        with quiet_mmengine():
            segmentor = MODELS.build(model_cfg)
            segmentor.init_weights()  # mmseg's own initialisation (trunc-normal MiT, Kaiming ResNet)
        if pretrained:
            load_pretrained_backbone(self.card, segmentor.backbone, source)
        return MMSegLogits(segmentor, auxiliary_weights(model_cfg))

    def load(self, path: Path) -> dict[str, Any]:
        try:
            return super().load(path)
        except ModelError as exc:
            if "missing from the checkpoint: segmentor.auxiliary_head." not in str(exc):
                raise
            raise ModelError(
                f"{exc} (the checkpoint was saved by a diffzoo that did not build the config's auxiliary "
                f"head; train {self.card.name} again)"
            ) from exc


def recipe_from_config(cfg: Any, config_name: str) -> dict[str, Any]:
    """The trainer settings an mmseg config implies, keyed like a card's recipe.

    The batch is GPUs x per-GPU batch, the GPUs read from mmseg's file name
    convention (``_4xb4-``); the test compares these with the cards.
    """
    opt = cfg.optim_wrapper.optimizer
    custom = cfg.optim_wrapper.get("paramwise_cfg", {}).get("custom_keys", {})
    poly = next(s for s in cfg.param_scheduler if s.type == "PolyLR")
    warmup = next((s for s in cfg.param_scheduler if s.type == "LinearLR"), None)
    match = re.search(r"_(\d+)xb(\d+)-", config_name)
    if match is None or int(match[2]) != cfg.train_dataloader.batch_size:
        raise ModelError(f"{config_name}: cannot read GPUs x batch from the name")
    flips = [t for t in cfg.train_dataloader.dataset.pipeline if t.type == "RandomFlip"]
    crop = cfg.crop_size
    out = {
        "optimizer": opt.type,
        "lr": opt.lr,
        "weight_decay": opt.weight_decay,
        "head_lr_mult": float(custom.get("head", {}).get("lr_mult", 1.0)),
        "warmup_iters": warmup.end if warmup is not None else 0,
        "poly_power": poly.power,
        "min_lr": poly.eta_min,
        "iterations": cfg.train_cfg.max_iters,
        "batch_size": int(match[1]) * cfg.train_dataloader.batch_size,
        "crop_size": crop[0] if crop[0] == crop[1] else tuple(crop),
        "hflip": any(t.get("prob", 0) > 0 for t in flips),
        "pretrained": backbone_checkpoint(cfg.model) is not None,
        "auxiliary_head": bool(auxiliary_heads(cfg.model)),
    }
    weights = auxiliary_weights(cfg.model)
    if weights:
        out["auxiliary_loss_weight"] = weights[0] if len(weights) == 1 else tuple(weights)
    if opt.type == "SGD":
        out["momentum"] = opt.momentum
    else:
        out["betas"] = tuple(opt.betas)
    return out
