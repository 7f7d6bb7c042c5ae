"""What diffzoo knows of each IMDL-BenCo model: plain data, no torch, no IMDL-BenCo.

Every fact names where it comes from: IMDL-BenCo 0.1.45 (PyPI ``imdlbenco``;
GitHub scu-zjz/IMDLBenCo), its model files under ``IMDLBenCo/model_zoo/``,
the model folders' README.md and the demo scripts in
``IMDLBenCo/statics/model_zoo/runs/`` (``demo_train_<model>.sh``).  The cards
(``__init__.py``) are made from these specs; the adapter (``model.py``) builds
each model from them.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any

BENCO = "IMDL-BenCo 0.1.45"
RUNS = f"{BENCO} IMDLBenCo/statics/model_zoo/runs/"
BENCO_LICENCE = "IMDL-BenCo: CC-BY-4.0 (its pyproject.toml and LICENSE)"
INSTALL = "bash scripts/install-benco.sh"
"""The one command that installs the backend (docs/detectors.md)."""


def installed() -> bool:
    """True when IMDL-BenCo can be imported (found, not imported: listing stays light)."""
    return importlib.util.find_spec("IMDLBenCo") is not None


@dataclass(frozen=True)
class WeightFile:
    """A file a model's constructor argument ``arg`` loads: ``url`` when it can be
    downloaded directly (into the torch hub cache), else ``name`` to be put in
    ``$DIFFZOO_CACHE/weights/benco/`` by hand from ``source``.  ``required``: the
    constructor cannot run without it (else only ``pretrained`` runs load it)."""

    arg: str
    name: str
    source: str
    url: str | None = None
    required: bool = False


@dataclass(frozen=True)
class Spec:
    """One IMDL-BenCo model: how to build it, feed it and train it."""

    key: str  # benco.<key>
    title: str
    cls: str  # class in IMDLBenCo.model_zoo
    module: str  # its module
    paper: str
    size: int  # the input size its demo scripts train and test at
    rule: str  # "resize" or "pad" (IMDL-BenCo's --if_resizing / --if_padding)
    kwargs: dict[str, Any]  # constructor arguments of the full model
    recipe: dict[str, Any]  # demo_train script values: (value, "--flag")
    script: str
    licence: str = BENCO_LICENCE
    weights: tuple[WeightFile, ...] = ()
    tiny: dict[str, Any] | None = None  # constructor arguments of the .tiny variant (None: no tiny)
    tiny_size: int | None = None
    needs_cuda: bool = False
    out_size: int | None = None  # a head that outputs at a fixed size, whatever the input (Mesorch: 512)
    quirks: tuple[str, ...] = ()
    has_label: bool = False  # its pred_label (an image-level probability) is a second image row
    notes: dict[str, str] = field(default_factory=dict)


MIT_SOURCE = "NVlabs/SegFormer (https://github.com/NVlabs/SegFormer) ImageNet-1k MiT weights"

SPECS: tuple[Spec, ...] = (
    Spec(
        "iml-vit", "IML-ViT", "IML_ViT", "IMDLBenCo.model_zoo.iml_vit.iml_vit",
        "Ma et al., IML-ViT: Benchmarking Image Manipulation Localization by Vision Transformer, arXiv 2307.14863",
        1024, "pad", {"input_size": 1024},
        {"batch_size": (2, "--batch_size 2 x --accum_iter 8 = 16"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2"),
         "edge_mask_width": (7, "--edge_mask_width 7"), "edge_lambda": (20, "IML_ViT(edge_lambda=20)")},
        "demo_train_iml_vit.sh",
        weights=(WeightFile("vit_pretrain_path", "mae_pretrain_vit_base.pth",
                            "MAE ViT-B/16 (facebookresearch/mae)",
                            url="https://dl.fbaipublicfiles.com/mae/pretrain/mae_pretrain_vit_base.pth"),),
        tiny={"input_size": 64, "embed_dim": 96, "fpn_channels": 32, "mlp_embeding_dim": 32}, tiny_size=64,
        quirks=("its BatchNorm head can be poor at batch size 2 with authentic images (iml_vit.py docstring)",),
    ),
    Spec(
        "mvss-net", "MVSS-Net", "MVSSNet", "IMDLBenCo.model_zoo.mvss_net.mvssnet",
        "Chen et al., Image Manipulation Detection by Multi-View Multi-Scale Supervision, ICCV 2021, arXiv 2104.06832",
        512, "resize", {},
        {"batch_size": (8, "--batch_size 1 x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (2e-5, "--lr 2e-5"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2"),
         "edge_mask_width": (7, "--edge_mask_width 7"), "amp": (False, "--if_not_amp")},
        "demo_train_mvss.sh",
        weights=(WeightFile("resnet50", "resnet50-19c8e357.pth", "torchvision ImageNet ResNet-50 (its constructor "
                            "always fetches it, mvssnet.py model_urls)",
                            url="https://download.pytorch.org/models/resnet50-19c8e357.pth", required=True),),
        has_label=True,
        quirks=("its image label loss applies BCEWithLogits to a probability (mvssnet.py predict_loss)",
                "its demo scripts test with --no_model_eval (BatchNorm in train mode); diffzoo predicts in eval mode"),
    ),
    Spec(
        "cat-net", "CAT-Net", "Cat_Net", "IMDLBenCo.model_zoo.cat_net.cat_net",
        "Kwon et al., CAT-Net: Compression Artifact Tracing Network, WACV 2021; IJCV 2022, arXiv 2108.12947",
        512, "resize", {"cfg_file": "IMDLBenCo/statics/model_zoo/configs/CAT_full.yaml"},
        {"batch_size": (256, "--batch_size 32 x 4 GPUs x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2")},
        "demo_train_cat_net.sh",
        licence=BENCO_LICENCE + "; upstream CAT-Net: research use only, and HRNet's licence (mjkwon2021/CAT-Net)",
        weights=(WeightFile("PRETRAINED_RGB", "hrnetv2_w48_imagenet_pretrained.pth", "mjkwon2021/CAT-Net release"),
                 WeightFile("PRETRAINED_DCT", "DCT_djpeg.pth.tar", "mjkwon2021/CAT-Net release")),
        needs_cuda=True,
        quirks=("its constructor and forward call .cuda(): CUDA only",
                "IMDL-BenCo's data step (cat_net_post_func) JPEG-encodes the already normalised image, and the "
                "model maps its RGB input by (x - 127.5) / 127.5, the original CAT-Net's 0..255 convention: diffzoo "
                "encodes the image's own pixels (PIL defaults, quality 75, as IMDL-BenCo; jpegio reads the Y "
                "coefficients and table) and feeds the RGB stream 0..255 pixels (diffzoo/plugins/benco/catnet.py)"),
    ),
    Spec(
        "pscc-net", "PSCC-Net", "PSCC_Net", "IMDLBenCo.model_zoo.pscc_net.pscc_net",
        "Liu et al., PSCC-Net: Progressive Spatio-Channel Correlation Network, IEEE TCSVT 2022, arXiv 2103.10596",
        256, "resize", {"input_size": 256},
        {"batch_size": (16, "--batch_size 16"), "accum_iter": (1, "--accum_iter 1"), "epochs": (150, "--epochs 150"),
         "lr": (1e-4, "--lr 1e-4"), "min_lr": (0.0, "--min_lr 0"), "weight_decay": (0.05, "--weight_decay 0.05"),
         "warmup_epochs": (2, "--warmup_epochs 2"), "amp": (False, "--if_not_amp")},
        "demo_train_pscc.sh",
        licence=BENCO_LICENCE + "; its HRNet files: MIT (Microsoft)",
        weights=(WeightFile("pretrain_path", "hrnet_w18_small_v2.pth", "proteus1991/PSCC-Net models/ (GitHub)"),),
        tiny={"input_size": 64}, tiny_size=64, has_label=True,
        quirks=("its default pretrain_path=None raises TypeError; diffzoo passes '' for random weights",),
    ),
    Spec(
        "trufor", "TruFor", "Trufor", "IMDLBenCo.model_zoo.trufor.trufor",
        "Guillaro et al., TruFor: Leveraging all-round clues for trustworthy image forgery detection and "
        "localization, CVPR 2023, arXiv 2212.10957",
        512, "resize", {"phase": 2, "config_path": "IMDLBenCo/statics/model_zoo/configs/trufor.yaml"},
        {"batch_size": (8, "--batch_size 8"), "accum_iter": (1, "--accum_iter 1"), "epochs": (150, "--epochs 150"),
         "lr": (4e-6, "--lr 4e-6"), "min_lr": (0.0, "--min_lr 0"), "weight_decay": (0.05, "--weight_decay 0.05"),
         "warmup_epochs": (2, "--warmup_epochs 2"), "amp": (False, "--if_not_amp")},
        "demo_train_trufor.sh",
        licence=("NON-COMMERCIAL: TruFor's code is GRIP-UNINA's, 'only for informational and nonprofit purposes' "
                 "(IMDLBenCo/model_zoo/trufor/DnCNN.py header, grip-unina/TruFor LICENSE.txt); CMX parts MIT; "
                 + BENCO_LICENCE),
        weights=(WeightFile("np_pretrain_weights", "noiseprint.pth", "Noiseprint++ extracted from TruFor's "
                            "checkpoint (IMDLBenCo/model_zoo/trufor/README.md: Baidu or Google Drive)", required=True),
                 WeightFile("mit_b2_pretrain_weights", "mit_b2.pth", MIT_SOURCE, required=True)),
        quirks=("phase 2 (localization) only: IMDL-BenCo's phase-3 loss crashes on a shape mismatch",
                "no image-score row: its pred_label comes from the detection head, which phase 2 freezes at its "
                "random initialisation (trufor.py), so it means nothing",
                "images are normalised twice (IMDL-BenCo normalises, the model normalises again)"),
    ),
    Spec(
        "objectformer", "ObjectFormer", "ObjectFormer", "IMDLBenCo.model_zoo.object_former.object_former",
        "Wang et al., ObjectFormer for Image Manipulation Detection and Localization, CVPR 2022, arXiv 2203.14681",
        224, "resize", {"input_size": 224},
        {"batch_size": (96, "--batch_size 12 x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (1100, "--epochs 1100"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2")},
        "demo_train_object_former.sh",
        weights=(WeightFile("init_weight_path", "processed_model_weights.pth",
                            "timm vit_base_patch16_224 converted by the script posted in scu-zjz/IMDLBenCo#41 "
                            "(IMDLBenCo/model_zoo/object_former/README.md)"),),
        tiny={"input_size": 64, "num_prototypes": 32, "num_layers": 1}, tiny_size=64,
        notes={"tiny": "width 768 is fixed by its heads; num_prototypes must be 2 x (input/16)^2"},
    ),
    Spec(
        "sparsevit", "SparseViT", "SparseViT", "IMDLBenCo.model_zoo.sparse_vit.sparse_vit",
        "Su et al., SparseViT: Nonsemantics-Centered, Parameter-Efficient Image Manipulation Localization through "
        "Spare-Coding Transformer, AAAI 2025, arXiv 2412.14598",
        512, "resize", {"img_size": 512},
        {"batch_size": (64, "--batch_size 16 x 4 processes"), "accum_iter": (1, "--accum_iter 1"),
         "epochs": (200, "--epochs 200"), "lr": (2e-4, "--lr 2e-4"), "min_lr": (0.0, "--min_lr 0"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (4, "--warmup_epochs 4")},
        "demo_train_sparse_vit.sh",
        licence=BENCO_LICENCE + "; sparse_vit.py: 'All rights reserved' header",
        weights=(WeightFile("pretrained_path", "uniformer_base_in1k.pth",
                            "https://huggingface.co/Sense-X/uniformer_image"),),
        tiny={"depth": [1, 1, 15, 4], "embed_dim": [16, 32, 320, 512], "head_dim": 32, "img_size": 128,
              "s_blocks3": [4, 4, 4, 4], "s_blocks4": [4, 4]}, tiny_size=128,
        notes={"tiny": "its fusion head fixes stages 3-4 (320/512 wide, 15 and 4 blocks at least)"},
    ),
    Spec(
        "mesorch", "Mesorch", "Mesorch", "IMDLBenCo.model_zoo.mesorch.mesorch",
        "Zhu et al., Mesoscopic Insights: Orchestrating Multi-scale & Hybrid Architecture for Image Manipulation "
        "Localization, AAAI 2025, arXiv 2412.13753",
        512, "resize", {"conv_pretrain": False},
        {"batch_size": (96, "--batch_size 12 x 4 GPUs x --accum_iter 2"), "accum_iter": (2, "--accum_iter 2"),
         "epochs": (150, "--epochs 150"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2")},
        "demo_train_mesorch.sh",
        weights=(WeightFile("seg_pretrain_path", "mit_b3.pth", MIT_SOURCE),),
        tiny={"conv_pretrain": False}, tiny_size=64, out_size=512,
        notes={"tiny": "no width arguments: the full 85.8 M model at 64 px; its head still outputs 512 x 512 "
                       "(mesorch.py nn.Upsample(size=(512, 512))), so its mask is given at 512",
               "pretrained": "its ConvNeXt-Tiny comes from timm (hub) with conv_pretrain=True"},
    ),
    Spec(
        "span", "SPAN", "SPAN", "IMDLBenCo.model_zoo.span.SPAN",
        "Hu et al., SPAN: Spatial Pyramid Attention Network for Image Manipulation Localization, ECCV 2020, "
        "arXiv 2009.00726",
        224, "resize", {},
        {"batch_size": (256, "--batch_size 8 x 4 processes x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2")},
        "demo_train_span.sh",
        weights=(WeightFile("weight_path", "IMTFEv4.pt", "RonyAbecidan/ManTraNet-pytorch (GitHub)", required=True),),
        quirks=("IMDL-BenCo's SPAN builds four new random convolutions inside every forward (SPAN.py "
                "Last_Layer_0725): its output differs on every call; diffzoo builds them once, as trained layers",),
    ),
    Spec(
        "mantra-net", "ManTra-Net", "MantraNet", "IMDLBenCo.model_zoo.mantra_net.mantranet",
        "Wu, AbdAlmageed & Natarajan, ManTra-Net: Manipulation Tracing Network, CVPR 2019",
        512, "resize", {},
        {"batch_size": (16, "--batch_size 1 x 2 processes x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (2, "--warmup_epochs 2")},
        "demo_train_mantra_net.sh",
        tiny={}, tiny_size=64,
        quirks=("IMDL-BenCo's ManTra-Net ends in a sigmoid but trains with BCEWithLogits on it; diffzoo trains it "
                "with binary cross-entropy on the probability",
                "its Bayar filter is rewritten in place on every forward, so repeated predictions drift; diffzoo "
                "restores the weights after each prediction"),
        notes={"tiny": "no width arguments: the full 3.8 M model at 64 px"},
    ),
    Spec(
        "mscdi-net", "MSCDI-Net", "MSCDI_Net", "IMDLBenCo.model_zoo.mscdi_net.MSCDI_Net",
        "MSCDI-Net: multi-scale cross-domain interaction network for image manipulation localization "
        "(csust-sonie/MSCDI-Net; scu-zjz/IMDLBenCo#126)",
        512, "resize", {"backbone": "mit_bit4"},
        {"batch_size": (512, "--batch_size 16 x 4 GPUs x --accum_iter 8"), "accum_iter": (8, "--accum_iter 8"),
         "epochs": (200, "--epochs 200"), "lr": (1e-4, "--lr 1e-4"), "min_lr": (5e-7, "--min_lr 5e-7"),
         "weight_decay": (0.05, "--weight_decay 0.05"), "warmup_epochs": (4, "--warmup_epochs 4"),
         "edge_mask_width": (7, "--edge_mask_width 7")},
        "demo_train_mscdi_net.sh",
        weights=(WeightFile("backbone_weights_path", "mit_b4.pth", MIT_SOURCE, required=True),),
    ),
)
"""The eleven models, in IMDL-BenCo's model_zoo order."""

