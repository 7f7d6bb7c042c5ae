"""The steps of multi-turn dataset generation (``diffzoo generate`` and the ``mini`` build).

Base images (``bases.py``; COCO in ``coco.py``), candidate edit regions
(``regions.py``, COCO instances, open-vocabulary detection + SAM in
``openvocab.py``), prompts (``prompts.py``, or a VLM in ``vlm.py``), the
seeded balanced schedule (``schedule.py``), multi-turn editing with exact
labels (``multiturn.py``), the quality filter (``quality.py``), the DiffSeg30k
layout writer (``layout.py``), and ``pipeline.py``, the resumable, sharded
run that joins them, taking the settings ``defaults.py`` declares.
"""
