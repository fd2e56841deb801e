"""``python -m asyncsched.cli``."""

import sys

from asyncsched.cli import main

sys.exit(main())
