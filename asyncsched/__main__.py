"""``python -m asyncsched``: the ``asyncsched`` command."""

import sys

from asyncsched.cli import main

sys.exit(main())
