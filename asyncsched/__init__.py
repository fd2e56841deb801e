"""asyncsched: a Volcano-compatible batch scheduler for Kubernetes, in Python."""
