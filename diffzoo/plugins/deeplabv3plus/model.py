"""The DeepLabv3+ network, built with segmentation-models-pytorch."""

from __future__ import annotations

from torch import nn

from diffzoo.plugin import NO_PRETRAINED, DetectorCard, ModelError, SegmentationDetector, built_from, hub_weights


def encoder_weights(card: DetectorCard) -> str:
    """Make sure the card's smp encoder weights are cached and unchanged; return smp's name for them.

    smp downloads encoder weights from the hub inside its constructor, without
    ``local_files_only``; fetching them here first (pinned to smp's revision)
    turns a missing download into a clear error, hash-checks the file
    (:func:`~diffzoo.plugin.check_weights`) and lets smp read the cache.
    """
    import segmentation_models_pytorch as smp
    from segmentation_models_pytorch.encoders import encoders

    name = card.arch["encoder"]
    settings = encoders.get(name, {}).get("pretrained_settings", {})
    found = [(key, s["revision"]) for key, s in settings.items() if s.get("repo_id") == card.weights]
    if not found:
        raise ModelError(
            f"detector {card.name}: segmentation-models-pytorch {smp.__version__} has no weights "
            f"{card.weights!r} for encoder {name!r} (it has {sorted(settings) or 'none'})"
        )
    key, revision = found[0]
    hub_weights(card, card.weights, ("model.safetensors",), revision=revision, also=("config.json",),
                detail=f"ImageNet ResNet encoder for smp, revision {revision}; {NO_PRETRAINED}")
    return key


class DeepLabV3PlusDetector(SegmentationDetector):
    head_prefixes = ("decoder", "segmentation_head")
    no_decay_keywords = ()  # mmseg schedule_80k: no paramwise_cfg, every parameter decays

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        import segmentation_models_pytorch as smp

        self.card.check_pretrained(pretrained)
        arch = self.card.arch
        with built_from():  # the encoder file's first use is recorded once smp has built the model from it
            weights = encoder_weights(self.card) if pretrained else None
            model = smp.DeepLabV3Plus(
                encoder_name=arch["encoder"],
                encoder_weights=weights,
                encoder_output_stride=arch["encoder_output_stride"],
                decoder_channels=arch["decoder_channels"],
                decoder_atrous_rates=tuple(arch["decoder_atrous_rates"]),
                decoder_aspp_dropout=arch["decoder_aspp_dropout"],
                classes=num_outputs,
                **{k: tuple(v) if isinstance(v, list) else v for k, v in arch.get("encoder_kwargs", {}).items()},
            )
        return model
