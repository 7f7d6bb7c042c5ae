"""Datasets made or read with the generators.

``mini.py`` is the embedded demo dataset, built offline by the tiny editors;
``imgedit.py`` reads ImgEdit's instruction-editing pairs (formats in
``imgedit_format.py``) and labels them by pixel differences, cached; ``pairs.py`` labels any folders of (original,
edited) pairs the same way (``diffzoo data label-pairs``); ``reedit.py`` is
the distortion that re-edits one editor's regions of a dataset with another
generator.
"""
