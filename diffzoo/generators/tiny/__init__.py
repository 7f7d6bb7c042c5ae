"""Tiny random-weight builds of every editor's diffusers pipeline, made offline.

``components.py`` holds the shared pieces (tokenizers made in code, seeded
construction, small UNet/VAE/text-encoder configs, random LoRAs); ``extra.py``
(SD2, SDXL, Flux.1, SD3.5, Kandinsky 2.2, Kolors, HunyuanDiT),
``qwen.py`` (Qwen text and vision-language encoders) and ``instruct.py``
(FLUX.2, Qwen-Image-Edit, LongCat) build pipelines from them; ``builders.py``
picks the build for a card.  Imports run components <- extra/qwen/instruct
<- builders, and nothing here imports the editors.
"""
