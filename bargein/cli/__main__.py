"""``python -m bargein.cli``: the same as the ``bargein`` command."""

import sys

from bargein.cli import main

sys.exit(main())
