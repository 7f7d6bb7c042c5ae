"""pluggy hook specifications: one ``register_*`` hook per extension point.

Each hook receives a ``register`` callback.  Registration is lazy: pass a
``"module:attr"`` string so that listing never imports torch or diffusers.

    register(name, target, *, card=None, default=False, description="")
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("diffzoo")
hookimpl = pluggy.HookimplMarker("diffzoo")


@hookspec
def register_detectors(register):
    """Register detector factories: ``target(build) -> Detector``, ``build`` a ``DetectorBuild``
    (card, task, label space, pretrained); ``card`` is the entry's DetectorCard."""


@hookspec
def register_generators(register):
    """Register editors: ``target(card, **options) -> Generator``; ``card`` is the entry's GeneratorCard."""


@hookspec
def register_datasets(register):
    """Register dataset adapters: ``target(path=None, **options) -> Dataset``.

    An adapter class may define ``sniff(path) -> bool`` so that
    ``--dataset PATH`` finds it.
    """


@hookspec
def register_suites(register):
    """Register benchmark suites: ``target`` is a ``Suite`` object."""


@hookspec
def register_distortions(register):
    """Register distortions: ``target(image, label, **params) -> (image, label)``."""


@hookspec
def register_commands(cli):
    """Add sub-commands to the typer app ``cli``."""
