"""Code the tests share: builders of datasets, records and detectors, CLI runners, backend checks.

Tests import it as ``from helpers.<module> import ...`` (pytest puts ``tests/`` on ``sys.path``
because ``tests/conftest.py`` lives there).  Nothing here is a test or a fixture: fixtures live in
the conftest files, which import what they need from here.
"""
