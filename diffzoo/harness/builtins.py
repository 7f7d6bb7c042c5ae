"""The harness's own in-tree plugin: suites, dataset adapters, distortions.

Registered through the same hooks as any third-party plugin.
"""

from __future__ import annotations

from diffzoo.harness.core.hookspecs import hookimpl
from diffzoo.harness.data.hfsource import DIFFSEG30K_HUB_ID
from diffzoo.harness.suites import ALL_SUITES


@hookimpl
def register_suites(register):
    for suite in ALL_SUITES:
        register(suite.name, suite, description=suite.description)


_DATASETS = (  # (name, "module:class" of diffzoo.harness.data.adapters, description)
    ("diffseg30k", "diffseg30k:DiffSeg30kDataset",
     f"DiffSeg30k (hub {DIFFSEG30K_HUB_ID}, or a local train.zip / folder such as train_copy/ / parquet)"),
    ("pape", "pape:PapeDataset",
     "PAPE (hub PatrickZZZ/PAPE_Dataset): <subset>/<editor>/ with manifest.jsonl, "
     "source/, normal/, abnormal/, masks/"),
    ("pixar", "pixar:PixarDataset",
     "PIXAR (VILA-Lab/PIXAR): <split>/{real,tampered,soft_masks,masks,metadata}/ "
     "+ mapping.json, or a folder of per-editor test sets"),
    ("tpgt", "generic:TpGtDataset", "a folder with Tp/ (images) and Gt/ (masks), optional Au/ (authentic)"),
    ("casia1", "casia:Casia1Dataset",
     "CASIA v1.0: Au/ + Modified Tp/Tp/{CM,Sp}, masks in 'CASIA 1.0 groundtruth' (gt_dir=)"),
    ("casia2", "casia:Casia2Dataset",
     "CASIA v2.0: Au/ + Tp/ (Tp_D_*/Tp_S_*) + 'CASIA 2 Groundtruth' / groundtruth / Gt (gt_dir=)"),
    ("cocoglide", "cocoglide:CocoGlideDataset", "CocoGlide: table.csv (real,fake,mask,prompt) + real/, fake/, mask/"),
    ("columbia", "classic:ColumbiaDataset",
     "Columbia Uncompressed Image Splicing: 4cam_auth/, 4cam_splc/ + 4cam_splc/edgemask/*_edgemask.jpg"),
    ("coverage", "classic:CoverageDataset", "COVERAGE copy-move: image/<N>.tif, image/<N>t.tif, mask/<N>forged.tif"),
    ("nist16", "classic:Nist16Dataset",
     "NIST16 (NC2016_Test0613): probe/ + reference/<task>/NC2016-<task>-ref.csv (task=)"),
    ("imd2020", "classic:Imd2020Dataset", "IMD2020 real-life: <folder>/<x>_orig.jpg, <y>.jpg|png + <y>_mask.png"),
    ("tgif", "tgif:TgifDataset",
     "TGIF / TGIF2 (IDLabMedia/tgif-dataset): <generator>-sp|fr/, masks*/, original*/, "
     "each by training/validation/testing (or a folder of such downloads)"),
    ("sofake", "sofake:SoFakeDataset",
     "So-Fake-Set / So-Fake-OOD (saberzl/So-Fake-Set, saberzl/So-Fake-OOD): parquet / save_to_disk "
     "rows image, mask, label, filename (+ generator, source, split); label order v1/v2 placed from the data"),
    ("jsonlist", "generic:JsonListDataset", 'a JSON list of [image, mask | "Negative"] pairs'),
    ("deal300k", "deal300k:Deal300kDataset",
     "DEAL-300K (ymhzyj/DEAL-300K): train.zip / val.zip / test.zip (or their folders) + label.zip "
     "(or label/); <cocoid>.jpg, <cocoid>_qwen<ckpt>.jpg + .png mask"),
    ("brgen", "brgen:BrGenDataset",
     "BR-Gen (clpbc/BR-Gen): Au/ + Tp/<inpainter>_<Stuff|Background>_<photo> + Gt/*_mask.png, "
     "JSON split files"),
    ("opensdi", "opensdi:OpenSdiDataset",
     "OpenSDI (nebula/OpenSDI_train, nebula/OpenSDI_test): parquet / save_to_disk rows "
     "key, image, mask, label; splits train, test and one per generator (sd15, sd2, sdxl, sd3, flux)"),
    ("sidset", "sidset:SidSetDataset",
     "SID-Set (saberzl/SID_Set): parquet / save_to_disk rows img_id, image, mask, label, "
     "or SIDA's <split>/{real,full_synthetic,tampered,masks}/ folders or zip"),
)


@hookimpl
def register_datasets(register):
    for name, target, description in _DATASETS:
        register(name, f"diffzoo.harness.data.adapters.{target}", description=description)


_DISTORTIONS = (  # (name, function of diffzoo.harness.data.distortions, description)
    ("none", "identity", "no distortion"),
    ("jpeg", "jpeg", "JPEG at an exact quality (1..100), 4:2:0"),
    ("webp", "webp", "lossy WebP at quality (1..100), method 4"),
    ("resize", "resize", "longer side to size px (bicubic); scored at the original size unless back=false"),
    ("rescale", "rescale",
     "shorter side to scale x the model's input resolution (bicubic); scored at the label's size"),
    ("blur", "blur", "Gaussian blur of sigma px (reflect-101 border)"),
    ("noise", "noise", "additive Gaussian noise, sigma in 0..255 units, seeded per image"),
    ("crop", "crop", "centre crop keeping fraction of each side"),
    ("reencode", "reencode", "re-encode as png (lossless), jpeg or webp (quality)"),
)


@hookimpl
def register_distortions(register):
    for name, function, description in _DISTORTIONS:
        register(name, f"diffzoo.harness.data.distortions:{function}", description=description)
