"""Dataset adapters: one module per dataset family (DiffSeg30k, PAPE, PIXAR, CASIA,
CocoGlide, the generic Tp/Gt and JSON-list layouts).  A new benchmark's adapter goes
here; what adapters share (decoding, label maps, splits, sources, fingerprints,
provenance, statistics) stays one level up, in :mod:`diffzoo.harness.data`.
docs/datasets.md describes each layout.
"""
