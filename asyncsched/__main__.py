"""``python -m asyncsched``: the same as the ``asyncsched`` command."""

import sys

from asyncsched.cli import main

sys.exit(main())
