"""Generators: the editors that make localized AI edits and the data built or read with them.

``editors/`` holds the generator cards and the classes that run them,
``tiny/`` the tiny random-weight builds of every editor's pipeline, ``generate/``
the steps of multi-turn dataset generation and ``datasets/`` the datasets
made or read with them; ``plugin.py`` registers the cards and datasets
lazily; ``diffusers_classes.py`` is the one lookup of a diffusers class by name.
Imports run one way: ``diffusers_classes`` <- ``tiny`` <- ``editors`` <-
``generate`` <- ``datasets``, and every subpackage may use ``diffzoo.harness``.
"""
