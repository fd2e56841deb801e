"""The cluster cache fed by watch events, and the snapshots sessions run on."""

from asyncsched.cache.cluster_cache import DEFAULT_SCHEDULER_NAMES, ClusterCache

__all__ = ["DEFAULT_SCHEDULER_NAMES", "ClusterCache"]
