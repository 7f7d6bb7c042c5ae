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


@hookimpl
def register_datasets(register):
    register(
        "diffseg30k",
        "diffzoo.harness.data.adapters.diffseg30k:DiffSeg30kDataset",
        description=f"DiffSeg30k (hub {DIFFSEG30K_HUB_ID}, or a local train.zip / folder / parquet)",
    )
    register(
        "pape",
        "diffzoo.harness.data.adapters.pape:PapeDataset",
        description="PAPE (hub PatrickZZZ/PAPE_Dataset): <subset>/<editor>/ with manifest.jsonl, "
        "source/, normal/, abnormal/, masks/",
    )
    register(
        "pixar",
        "diffzoo.harness.data.adapters.pixar:PixarDataset",
        description="PIXAR (VILA-Lab/PIXAR): <split>/{real,tampered,soft_masks,masks,metadata}/ "
        "+ mapping.json, or a folder of per-editor test sets",
    )
    register(
        "tpgt",
        "diffzoo.harness.data.adapters.generic:TpGtDataset",
        description="a folder with Tp/ (images) and Gt/ (masks), optional Au/ (authentic)",
    )
    register(
        "casia1",
        "diffzoo.harness.data.adapters.casia:Casia1Dataset",
        description="CASIA v1.0: Au/ + Modified Tp/Tp/{CM,Sp}, masks in 'CASIA 1.0 groundtruth' (gt_dir=)",
    )
    register(
        "casia2",
        "diffzoo.harness.data.adapters.casia:Casia2Dataset",
        description="CASIA v2.0: Au/ + Tp/ (Tp_D_*/Tp_S_*) + 'CASIA 2 Groundtruth' / groundtruth / Gt (gt_dir=)",
    )
    register(
        "cocoglide",
        "diffzoo.harness.data.adapters.cocoglide:CocoGlideDataset",
        description="CocoGlide: table.csv (real,fake,mask,prompt) + real/, fake/, mask/",
    )
    register(
        "columbia",
        "diffzoo.harness.data.adapters.classic:ColumbiaDataset",
        description="Columbia Uncompressed Image Splicing: 4cam_auth/, 4cam_splc/ + 4cam_splc/edgemask/*_edgemask.jpg",
    )
    register(
        "coverage",
        "diffzoo.harness.data.adapters.classic:CoverageDataset",
        description="COVERAGE copy-move: image/<N>.tif, image/<N>t.tif, mask/<N>forged.tif",
    )
    register(
        "nist16",
        "diffzoo.harness.data.adapters.classic:Nist16Dataset",
        description="NIST16 (NC2016_Test0613): probe/ + reference/<task>/NC2016-<task>-ref.csv (task=)",
    )
    register(
        "imd2020",
        "diffzoo.harness.data.adapters.classic:Imd2020Dataset",
        description="IMD2020 real-life: <folder>/<x>_orig.jpg, <y>.jpg|png + <y>_mask.png",
    )
    register(
        "tgif",
        "diffzoo.harness.data.adapters.tgif:TgifDataset",
        description="TGIF / TGIF2 (IDLabMedia/tgif-dataset): <generator>-sp|fr/, masks*/, original*/, "
        "each by training/validation/testing (or a folder of such downloads)",
    )
    register(
        "sofake",
        "diffzoo.harness.data.adapters.sofake:SoFakeDataset",
        description="So-Fake-Set / So-Fake-OOD (saberzl/So-Fake-Set, saberzl/So-Fake-OOD): parquet / save_to_disk "
        "rows image, mask, label, filename (+ generator, source, split); label order v1/v2 placed from the data",
    )
    register(
        "jsonlist",
        "diffzoo.harness.data.adapters.generic:JsonListDataset",
        description='a JSON list of [image, mask | "Negative"] pairs',
    )
    register(
        "deal300k",
        "diffzoo.harness.data.adapters.deal300k:Deal300kDataset",
        description="DEAL-300K (ymhzyj/DEAL-300K): train.zip / val.zip / test.zip (or their folders) + label.zip "
        "(or label/); <cocoid>.jpg, <cocoid>_qwen<ckpt>.jpg + .png mask",
    )
    register(
        "brgen",
        "diffzoo.harness.data.adapters.brgen:BrGenDataset",
        description="BR-Gen (clpbc/BR-Gen): Au/ + Tp/<inpainter>_<Stuff|Background>_<photo> + Gt/*_mask.png, "
        "JSON split files",
    )
    register(
        "opensdi",
        "diffzoo.harness.data.adapters.opensdi:OpenSdiDataset",
        description="OpenSDI (nebula/OpenSDI_train, nebula/OpenSDI_test): parquet / save_to_disk rows "
        "key, image, mask, label; splits train, test and one per generator (sd15, sd2, sdxl, sd3, flux)",
    )
    register(
        "sidset",
        "diffzoo.harness.data.adapters.sidset:SidSetDataset",
        description="SID-Set (saberzl/SID_Set): parquet / save_to_disk rows img_id, image, mask, label, "
        "or SIDA's <split>/{real,full_synthetic,tampered,masks}/ folders or zip",
    )


@hookimpl
def register_distortions(register):
    register("none", "diffzoo.harness.data.distortions:identity", description="no distortion")
    register("jpeg", "diffzoo.harness.data.distortions:jpeg", description="JPEG at an exact quality (1..100), 4:2:0")
    register("webp", "diffzoo.harness.data.distortions:webp", description="lossy WebP at quality (1..100), method 4")
    register("resize", "diffzoo.harness.data.distortions:resize",
             description="longer side to size px (bicubic); scored at the original size unless back=false")
    register("rescale", "diffzoo.harness.data.distortions:rescale",
             description="shorter side to scale x the model's input resolution (bicubic); scored at the label's size")
    register("blur", "diffzoo.harness.data.distortions:blur",
             description="Gaussian blur of sigma px (reflect-101 border)")
    register("noise", "diffzoo.harness.data.distortions:noise",
             description="additive Gaussian noise, sigma in 0..255 units, seeded per image")
    register("crop", "diffzoo.harness.data.distortions:crop", description="centre crop keeping fraction of each side")
    register("reencode", "diffzoo.harness.data.distortions:reencode",
             description="re-encode as png (lossless), jpeg or webp (quality)")
