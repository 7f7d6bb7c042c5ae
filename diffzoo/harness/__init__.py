"""The harness core: types, protocols, registry, plugins, data, metrics, runner.

This package imports no plugin; plugins reach it through the plugin manager.
"""
