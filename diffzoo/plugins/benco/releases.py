"""The trained checkpoints the authors of IMDL-BenCo's models released, as their releases
describe them: plain data, no torch.

Every fact names its source: the repository and file it was read from.  Two kinds:

- **IMDL-BenCo's model zoo** (scu-zjz/IMDLBenCo): ``<model>_<trainset>.pth`` files holding
  only ``model``, the state dict of IMDL-BenCo's own model class (its ``test.py`` loads
  ``torch.load(path)["model"]`` strictly), so the keys are the ones ``benco.*`` saves.
- **The methods' own releases** (TruFor, CAT-Net, MVSS-Net, PSCC-Net, Mesorch, SparseViT): the
  file as its authors' loading code reads it.  IMDL-BenCo's ports keep the authors' module
  names, so the keys map by the wrapper key and a prefix; where that was read off the code
  only, not off a released file, the release's ``citation`` says "mapping inferred".

Published numbers are listed only where the release's own authors publish them for that
file (never a third party's quote of them).
"""

from __future__ import annotations

from diffzoo.plugin import Published, Release

BENCO_ZOO = ("IMDL-BenCo model zoo: Baidu Netdisk https://pan.baidu.com/s/1DtkOwLCTunvI3d_GAAj2Dg?pwd=bchm "
             "(code bchm) or Google Drive https://drive.google.com/drive/folders/1DCqc016-N4YvoMKKA87bFtrCdPVIDxAp")
BENCO_LICENCE = "CC-BY-4.0 (IMDL-BenCo's LICENSE; no separate licence is stated for the checkpoints)"
BENCO_LOADER = ("scu-zjz/IMDLBenCo IMDLBenCo/training_scripts/test.py: torch.load(path)['model'] loaded strictly "
                "into the model class")
ZOO_CITATION = f"{BENCO_LOADER}; file name from IMDL-BenCo's test scripts"
CAT_BENCO = ("IMDL-BenCo's CAT protocol (balanced_dataset.json: CASIA2.0, FantasticReality_v1, IMD_20_1024, "
             "tampCOCO sp/cm/bcm/bcmc; CompRAISE and some real-image sets of CAT-Net's own setting omitted)")
MVSS_DRIVE = ("MVSS-Net release: Baidu https://pan.baidu.com/s/1qbBulvsJ9FReUlng5zDYPg (code mvss) or Google Drive "
              "https://drive.google.com/drive/folders/1CztGkd91xF1QqEXuc2n8rVDTBJ7X695U")
MVSS_IMAGE = ("image score = the maximum of the predicted map; AUC by sklearn roc_auc_score, F1 at score > 0.5 "
              "(dong03/MVSS-Net README.md, evaluation)")
CAT_DRIVE = ("CAT-Net release: Google Drive https://drive.google.com/drive/folders/1hBEfnFtGG6q_srBHVEmbF3fTq0IhP8jq "
             "or Baiduyun https://pan.baidu.com/s/1hecZC0IZXdgh5WRbRoAytQ (code ycft)")
CAT_LOADER = ("mjkwon2021/CAT-Net tools/infer.py: checkpoint['state_dict'] into the network; IMDL-BenCo's Cat_Net "
              "holds that network as `model` (mapping inferred from the code, not checked on a released file)")


CASIA2 = ("casia2",)
CAT_SETS = ("casia2", "imd2020")
"""The diffzoo datasets among a release's training data (CASIA v2; the CAT protocol's CASIA v2 and
IMD2020): scoring one of them scores training images, which a run refuses unless told."""
SAVED_ARGS = ("argparse.Namespace",)
"""IMDL-BenCo's train.py saves its arguments (an argparse Namespace) beside ``model``; a file that
kept them is read with that one type allowed."""


def _mvss(metric: str, values: dict[str, float]) -> tuple[Published, ...]:
    return tuple(Published(benchmark, "the README's data/<set>.txt list", metric, MVSS_IMAGE, value,
                           "dong03/MVSS-Net README.md") for benchmark, value in values.items())


RELEASES: dict[str, tuple[Release, ...]] = {
    "mvss-net": (
        Release("casiav2", ("checkpoint-mvss-casiav2.pth",), BENCO_ZOO, "CASIAv2",
                "MVSS protocol (train CASIAv2; test CASIAv1, Columbia, NIST16, Coverage, IMD2020)", BENCO_LICENCE,
                unwrap=("model",), allow=SAVED_ARGS, train_datasets=CASIA2, citation=ZOO_CITATION),
        Release("official-casiav2", ("mvssnet_casia.pt",), MVSS_DRIVE, "CASIAv2", "MVSS-Net (ICCV 2021) setting",
                "not stated (dong03/MVSS-Net has no LICENSE file)", unwrap=(), train_datasets=CASIA2,
                published=_mvss("image AUC", {"CASIAv1plus": 0.932, "Columbia": 0.98, "COVER": 0.731,
                                              "DEFACTO-12k": 0.573})
                + _mvss("image F1", {"CASIAv1plus": 0.759, "Columbia": 0.802, "COVER": 0.244, "DEFACTO-12k": 0.404}),
                citation="dong03/MVSS-Net inference.py: model.load_state_dict(torch.load(path), strict=True), a bare "
                         "state dict (mapping onto IMDL-BenCo's MVSSNet inferred from the code)"),
    ),
    "iml-vit": (
        Release("casiav2", ("iml_vit_casiav2.pth",), BENCO_ZOO, "CASIAv2", "MVSS protocol", BENCO_LICENCE,
                unwrap=("model",), allow=SAVED_ARGS, train_datasets=CASIA2, citation=ZOO_CITATION),
    ),
    "cat-net": (
        Release("cat-protocol", ("cat_net_cat_net.pth",), BENCO_ZOO, CAT_BENCO, "CAT protocol as IMDL-BenCo runs it",
                BENCO_LICENCE, unwrap=("model",), allow=SAVED_ARGS, train_datasets=CAT_SETS, citation=ZOO_CITATION),
        Release("v2", ("CAT_full_v2.pth.tar",), CAT_DRIVE,
                "FantasticReality, CASIA v2, IMD2020, tampCOCO, compRAISE, balanced sampling (CAT-Net README, "
                "'CAT-Net settings')", "CAT-Net (IJCV 2022) general forgery model",
                "weights CC-BY-4.0, code Apache-2.0 (CAT-Net README)", unwrap=("state_dict",), prefixes=("model.",),
                train_datasets=CAT_SETS, citation=CAT_LOADER),
        Release("v1", ("CAT_full_v1.pth.tar",), CAT_DRIVE, "CAT-Net (WACV 2021) splicing data (list not published)",
                "CAT-Net (WACV 2021) splicing model", "weights CC-BY-4.0, code Apache-2.0 (CAT-Net README)",
                unwrap=("state_dict",), prefixes=("model.",), citation=CAT_LOADER),
    ),
    "pscc-net": (
        Release("cat-protocol", ("pscc_catnet.pth",), BENCO_ZOO, CAT_BENCO, "CAT protocol as IMDL-BenCo runs it",
                BENCO_LICENCE, unwrap=("model",), allow=SAVED_ARGS, train_datasets=CAT_SETS, citation=ZOO_CITATION),
        Release("official", ("HRNet.pth", "NLCDetection.pth", "DetectionHead.pth"),
                "proteus1991/PSCC-Net, committed under checkpoint/ (HRNet_checkpoint/, NLCDetection_checkpoint/, "
                "DetectionHead_checkpoint/)",
                "the authors' synthetic set: COCO splicing, USCISI copy-move, COCO removal, COCO authentic",
                "PSCC-Net pre-trained model (crop 256)", "MIT (PSCC-Net LICENSE)", unwrap=(),
                prefixes=("FENet.", "SegNet.", "ClsNet."),
                built=("weights",),  # IMDL-BenCo's PSCC_Net: its loss's class weights, not in the release
                citation="proteus1991/PSCC-Net test.py load_network_weight(): three nn.DataParallel state dicts "
                         "(every key `module.`); IMDL-BenCo's PSCC_Net holds them as FENet, SegNet, ClsNet "
                         "(mapping inferred from the code, not checked on the files)"),
    ),
    "trufor": (
        Release("official", ("trufor.pth.tar",),
                "https://www.grip.unina.it/download/prog/TruFor/TruFor_weights.zip (weights/trufor.pth.tar; the "
                "zip's MD5 7bee48f3476c75616c3c5721ab256ff8 is published)",
                "IMD2020, FantasticReality, CASIAv2, tampCOCO, compRAISE (TruFor's training configs); Noiseprint++ "
                "trained separately", "TruFor (CVPR 2023)",
                "GRIP-UNINA: informational and nonprofit use only (TruFor LICENSE.txt)", unwrap=("state_dict",),
                prefixes=("model.",), train_datasets=CAT_SETS,
                citation="grip-unina/TruFor test_docker/src/trufor_test.py: checkpoint['state_dict'] loaded strictly; "
                         "IMDL-BenCo's Trufor holds that network as `model` (mapping inferred from the code)"),
    ),
    "mesorch": (
        Release("official", ("mesorch-98.pth",),
                "Mesorch release: Google Drive "
                "https://drive.google.com/drive/folders/1jwYv-S3HAZqzz0YxM9bJynBiPv-O9-6x or Baidu "
                "https://pan.baidu.com/s/13Byzl5kFc_vZHX8SNe6gGg?pwd=meso (ckpt_mesorch/)", CAT_BENCO,
                "CAT protocol as IMDL-BenCo runs it (scu-zjz/Mesorch train_mesorch.sh)", "MIT (Mesorch LICENSE)",
                unwrap=("model",), allow=SAVED_ARGS, train_datasets=CAT_SETS,
                citation="scu-zjz/Mesorch test.py: torch.load(ckpt)['model'] into the Mesorch class IMDL-BenCo ships"),
    ),
    "sparsevit": (
        Release("official", ("checkpoint.pth",),
                "SparseViT release: Google Drive https://drive.google.com/file/d/104BPPvLXkxuPu_NHaxjesdcdZ-ln92-G",
                "CASIA2.0, FantasticReality_v1, IMD_20, tampCOCO (balanced_dataset.json)",
                "CAT protocol (IMDL-BenCo style)", "not stated (scu-zjz/SparseViT has no LICENSE file)",
                unwrap=("model",), allow=SAVED_ARGS, train_datasets=CAT_SETS,
                citation="scu-zjz/SparseViT main_test.py: torch.load(path)['model'] (its own loader is not strict; "
                         "diffzoo's is, so a key its class lacks is named)"),
    ),
}
"""Per IMDL-BenCo model key: its released checkpoints (the full card and its tiny variant
share them: a tiny model reads a file of the released layout at its own size)."""
