"""The harness: everything a benchmark run needs, and nothing that is a plugin.

``core/`` (errors, types, protocols, hooks, registry, plugin loading, device,
training config, the detector-output boundary) is the ground floor; ``data/``
and ``metrics/`` stand on it; ``suites/`` and ``models/`` (training and
checkpoints) above; ``records/`` (the typed result record) above those; and
``run/`` (request -> plan -> thresholds -> evaluate -> record) on top.  Each
package imports only from its own floor or below (tests/test_architecture.py);
plugins reach the harness through the plugin manager, never the reverse.
See docs/architecture.md.
"""
