"""Suite-wide settings."""

import os

# Every snapshot is also built from scratch and compared with the incremental one
# (asyncsched.model.snapshot): an unsafe reuse fails the test that caused it.
os.environ.setdefault("ASYNCSCHED_CHECK_SNAPSHOTS", "1")
