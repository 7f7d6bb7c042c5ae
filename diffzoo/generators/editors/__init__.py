"""Editors: generator cards (plain data) and the classes that run them.

``cards.py`` and ``instruct_cards.py`` hold one flat card per editor
variant; ``diffusers_editor.py`` is the one mask editor for every diffusers
inpainting pipeline, with mask-blended latent inpainting (``latent_blend.py``)
where diffusers has no inpaint pipeline and LoRAs and scheduler swaps
(``lora.py``); ``instruct.py`` runs the instruction editors, whose label comes
from the pixel-difference rule of ``labels.py``; ``glide/`` is diffzoo's own
GLIDE port; ``text2image.py`` makes AI base images from captions.  Tiny cards
are built by ``diffzoo.generators.tiny``.
"""
