"""``python -m bargein.cli``: the same as the ``bargein`` command."""

from bargein.cli import main

main()
