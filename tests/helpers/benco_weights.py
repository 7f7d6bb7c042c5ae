"""Random weight files of the right shapes, for the models whose constructor needs one.

TruFor, SPAN, MSCDI-Net (and MVSS-Net, through torch.hub) cannot be built without
a weight file; offline, the backend's tests and the benchmarks (``train_throughput.py``, ``gpu_check.py``)
build them from files written here: the same names, in the places diffzoo looks
for them (``$DIFFZOO_CACHE/weights/benco/``, the torch hub cache), with random
values.  Never used by a run: a model built from these is untrained.
"""

from __future__ import annotations

from pathlib import Path

import torch

from diffzoo.plugin import cache_root
from diffzoo.plugins.benco.specs import SPECS


def write_random_weights(key: str) -> list[Path]:
    """Write every weight file model ``key`` (``trufor``, ``span``, ...) requires; returns them."""
    spec = next(s for s in SPECS if s.key == key)
    written = []
    for weights in spec.weights:
        if not weights.required:
            continue
        folder = (Path(torch.hub.get_dir()) / "checkpoints" if weights.url
                  else cache_root().joinpath("weights", "benco"))
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(_random_state(weights.name), folder / weights.name)
        written.append(folder / weights.name)
    return written


def _random_state(name: str) -> dict[str, torch.Tensor]:
    if name == "IMTFEv4.pt":  # SPAN's ManTra-Net feature extractor (loaded strictly)
        from IMDLBenCo.model_zoo.span.mantranet import IMTFE

        return IMTFE(device=torch.device("cpu")).state_dict()
    if name == "noiseprint.pth":  # TruFor's Noiseprint++ DnCNN (loaded strictly)
        from IMDLBenCo.model_zoo.trufor.cmx.builder_np_conf import myEncoderDecoder
        from IMDLBenCo.model_zoo.trufor.config import _C, update_config

        from diffzoo.plugins.benco.model import package_file

        update_config(_C, None, package_file("IMDLBenCo/statics/model_zoo/configs/trufor.yaml"))
        return myEncoderDecoder(cfg=_C).dncnn.state_dict()
    if name == "resnet50-19c8e357.pth":  # MVSS-Net's torchvision ResNet-50
        import torchvision

        return torchvision.models.resnet50().state_dict()
    return {}  # the MiT backbones are loaded with strict=False: an empty file builds a random one
