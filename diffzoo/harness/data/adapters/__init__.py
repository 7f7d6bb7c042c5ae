"""Dataset adapters: one module per dataset family (DiffSeg30k, PAPE, PIXAR, CASIA,
CocoGlide, the generic Tp/Gt and JSON-list layouts, OpenSDI, SID-Set, DEAL-300K,
BR-Gen); ``mixed.py`` holds the label rule OpenSDI and SID-Set share for real, fully
generated and locally edited images (``mixed-v1``).  A new benchmark's adapter goes
here; what adapters share (decoding, label maps, splits, sources, ``datasets`` tables,
fingerprints, provenance, statistics) stays one level up, in :mod:`diffzoo.harness.data`.
docs/datasets.md describes each layout.
"""
