"""``python -m diffzoo``: the command line, as the ``diffzoo`` script runs it."""

from diffzoo.cli import main

main()
