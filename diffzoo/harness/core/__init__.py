"""The ground floor: what every detector, generator and dataset is held to.

Errors, value types, the extension protocols and their pluggy hookspecs, the
name registry and plugin loading, model cards, the training config, device
names, progress reporting, filesystem helpers, the torchrun layer, and the
detector-output boundary check.  Nothing here imports another harness package.
"""
