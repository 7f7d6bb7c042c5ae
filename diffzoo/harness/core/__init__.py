"""The harness core: what every detector, generator and dataset is held to.

New boundary code lives here (DESIGN.md's layout); the older core modules
(protocols, hookspecs, registry, plugins, errors, types) move here with
issue 14.
"""
