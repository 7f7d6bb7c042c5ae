"""CAT-Net's extra inputs: the JPEG DCT coefficients and quantisation table of each image.

IMDL-BenCo's CAT-Net (``Cat_Net``, IMDLBenCo/model_zoo/cat_net/cat_net.py) takes,
besides ``image`` and ``mask``, ``DCT_coef`` (B x H x W) and ``qtables``
(B x 8 x 8).  IMDL-BenCo makes them in ``cat_net_post_func``
(cat_net/cat_net_post_function.py, datasets/utils.py ``read_jpeg_from_memory``):
the image is saved as JPEG by PIL with its defaults (quality 75, 4:2:0 chroma
subsampling) and read back with ``jpegio``; only the luminance (Y) component is
used: its quantised DCT coefficients, in their 8 x 8 blocks in natural
(row-major) order, at the image's size rounded up to 8, and its quantisation
table, as float64.  :func:`jpeg_dct` does exactly that for one image and
:func:`catnet_inputs` for a batch.

Two upstream faults are fixed here, not inherited:

* IMDL-BenCo's post-function runs on the image tensor *after* its transforms,
  i.e. ImageNet-normalised floats (about -2.1 .. 2.6), which it casts to uint8
  (``.astype('uint8')``) before encoding: the JPEG, hence the coefficients, are
  of a meaningless image.  Here the image's own uint8 RGB pixels are encoded.
* ``Cat_Net.__post_process_tensor`` computes the RGB stream's input as
  ``(image - 127.5) / 127.5``, the original CAT-Net's convention
  (mjkwon2021/CAT-Net Splicing/data/AbstractDataset.py ``_create_tensor``: PIL
  uint8 pixels 0..255 -> [-1, 1]); fed IMDL-BenCo's normalised tensor, the RGB
  stream sees a nearly constant -1.  Here ``image`` is the 0..255 pixels (the
  same uint8 values that were JPEG-encoded, as float), so the stream sees
  [-1, 1] as the original CAT-Net does.  The RGB stream gets the image itself,
  not its JPEG re-decoding, as IMDL-BenCo intends (the JPEG only yields the
  coefficients).

What the network then does with them (cat_net.py, network_CAT.py): the
coefficients become a 21-channel one-hot volume of their magnitude clipped at
T = 20 (channel 0: coef == 0; channel i: |coef| == i for i = 1..19; channel 20:
|coef| >= 20); the DCT stream works per 8 x 8 block (H and W must be multiples
of 8) and multiplies its per-frequency features by the Y quantisation table.

Reading the coefficients: ``jpegio`` 0.2.8, what IMDL-BenCo (and the original
CAT-Net) use.  It is published only as an sdist, but builds in about 30 s with a
C++ compiler (Cython and numpy are fetched into pip's isolated build
environment; nothing installed changes) and runs on numpy 2; it bundles IJG
libjpeg 9c.  Entropy decoding is lossless, so any reader gives the same integers;
using upstream's keeps the parity exact (the backend's tests compare this module
with IMDL-BenCo's ``cat_net_post_func`` value for value).  It is imported lazily,
so the rest of the backend works without it.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np
import torch

from diffzoo.plugin import ModelError

JPEGIO = "jpegio==0.2.8"
"""The coefficient reader IMDL-BenCo uses (datasets/utils.py import_jpegio)."""
BLOCK = 8
T = 20
"""CAT-Net's clipping of |coefficient| in its one-hot DCT volume (cat_net.py __post_process_tensor)."""


def _jpegio() -> Any:
    try:
        import jpegio
    except ImportError as e:
        raise ModelError(f"benco.cat-net reads JPEG DCT coefficients with jpegio, which is not installed: run "
                         f"`bash scripts/install-benco.sh` (or `pip install --no-deps {JPEGIO}`: built from source, "
                         "needs a C++ compiler)") from e
    return jpegio


def jpeg_dct(image: np.ndarray, **save: Any) -> tuple[np.ndarray, np.ndarray]:
    """The Y channel's quantised DCT coefficients and quantisation table of ``image`` saved as JPEG.

    ``image``: H x W x 3 uint8 RGB.  It is saved by PIL with its defaults, as IMDL-BenCo's
    ``convert_to_temp_jpeg`` does (``save`` adds PIL save options, e.g. ``quality=100,
    subsampling=0`` as the original CAT-Net uses for non-JPEG inputs), and read with jpegio.
    Returns ``(coef, qtable)`` as IMDL-BenCo's ``__get_jpeg_info`` gives them: ``coef`` float64,
    ceil(H/8)*8 x ceil(W/8)*8 (libjpeg's Y array: its height/width_in_blocks, not padded to the
    16-pixel MCU of 4:2:0), each 8 x 8 block in natural order; ``qtable`` 8 x 8 float64, natural order.
    """
    from PIL import Image

    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"jpeg_dct takes an H x W x 3 uint8 RGB array, not {image.dtype} {image.shape}")
    jpegio = _jpegio()
    with tempfile.TemporaryDirectory(prefix="diffzoo-catnet-") as tmp:
        path = os.path.join(tmp, "image.jpg")  # jpegio reads only from a file path
        Image.fromarray(np.ascontiguousarray(image), "RGB").save(path, format="JPEG", **save)
        jpeg = jpegio.read(path)
        # copies: jpegio's arrays are views of buffers freed with its object
        coef = np.array(jpeg.coef_arrays[0], dtype=np.float64)
        qtable = np.array(jpeg.quant_tables[jpeg.comp_info[0].quant_tbl_no], dtype=np.float64)
        del jpeg
    return coef, qtable


def catnet_inputs(images: torch.Tensor, **save: Any) -> dict[str, torch.Tensor]:
    """CAT-Net's ``image``, ``DCT_coef`` and ``qtables`` for B x 3 x H x W images in [0, 1] at its input size.

    ``image``: the pixels as 0..255 floats (rounded to the uint8 values that are JPEG-encoded),
    which CAT-Net maps to [-1, 1]; ``DCT_coef``: B x H x W float32; ``qtables``: B x 8 x 8 float32;
    all on ``images``' device.  H and W must be multiples of 8 (CAT-Net's DCT stream works in
    8 x 8 blocks, and its RGB and DCT inputs are concatenated, so they must be the same size).
    """
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"catnet_inputs takes B x 3 x H x W images, not {tuple(images.shape)}")
    b, _, h, w = images.shape
    if h % BLOCK or w % BLOCK:
        raise ModelError(f"CAT-Net needs an input size that is a multiple of {BLOCK} (its DCT stream reads "
                         f"8 x 8 JPEG blocks), not {h} x {w}")
    pixels = (images.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).cpu()
    coefs, qtables = [], []
    for pixel in pixels.permute(0, 2, 3, 1).numpy():
        coef, qtable = jpeg_dct(pixel, **save)
        assert coef.shape == (h, w), (coef.shape, (h, w))  # multiples of 8: the Y array is the image's size
        coefs.append(coef)
        qtables.append(qtable)
    device = images.device
    return {"image": pixels.to(device=device, dtype=torch.float32),
            "DCT_coef": torch.from_numpy(np.stack(coefs)).to(device=device, dtype=torch.float32),
            "qtables": torch.from_numpy(np.stack(qtables)).to(device=device, dtype=torch.float32)}
