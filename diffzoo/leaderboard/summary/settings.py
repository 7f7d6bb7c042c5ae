"""The settings of the distortions suite as its cases name them
(``<setting>.<task>``: ``jpeg80.binary``, ``clean.image``): which setting a
case is, what distortion it stands for, and how a summary row names it."""

from __future__ import annotations

from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites.paper import PAPER_DISTORTIONS, PAPER_SETTING_NAMES, SWEEPS

CLEAN = "clean"
"""The undistorted setting: the reference point of every robustness curve."""
PAPER_SETTINGS = tuple(label for label, _, _ in PAPER_DISTORTIONS)
SWEEP_SETTINGS = tuple(label for label, _, _ in SWEEPS)
KNOWN_SETTINGS = {label: (distortion, dict(params)) for label, distortion, params in (*PAPER_DISTORTIONS, *SWEEPS)}


def setting_of(case_name: str) -> tuple[str, str]:
    """(setting, task) of a case named ``<setting>.<task>``."""
    setting, _, task = case_name.rpartition(".")
    return (setting, task) if setting else (case_name, "")


def distortion_of(record: ResultRecord) -> tuple[str, dict]:
    """(distortion, params) of a distortions-suite record: its case's, else
    the suite's definition of the setting it is named after."""
    body = record.body
    setting, _ = setting_of(body.case_name)
    if body.distortion == "none" and setting in KNOWN_SETTINGS:
        return KNOWN_SETTINGS[setting]
    return body.distortion, body.distortion_params


def setting_label(setting: str) -> str:
    """A row label that says what a setting is and which of the paper's columns it stands for."""
    distortion, params = KNOWN_SETTINGS.get(setting, ("", {}))
    paper = PAPER_SETTING_NAMES.get(setting)
    if distortion == "rescale":
        what = f"{setting}: {params['scale']:g}x the training resolution"
        return f"{what} (paper: {paper})" if paper else what
    return f"{setting} (paper: {paper})" if paper else setting
