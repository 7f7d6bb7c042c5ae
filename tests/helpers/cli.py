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


def one_line_exit_2(code, stdout, stderr, *needles):
    """Assert a user error: exit 2 and one ``error:`` line on stderr holding every needle; the line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, (code, stdout, stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def one_line(text: str) -> str:
    """``text`` without its line breaks: a message the console wrapped, read as one line."""
    return text.replace("\n", "")
