"""Running the ``diffzoo`` command line from a test: in-process, or as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def cli(capsys, *args):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from diffzoo.cli import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


def diffzoo(site, *args, env_extra=None):
    """``python -m diffzoo *args`` in a subprocess with ``PYTHONPATH=site`` (where plugin packages
    are installed): the completed process, its output as text."""
    env = dict(os.environ, PYTHONPATH=str(site), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "diffzoo", *args], capture_output=True, text=True, env=env)
