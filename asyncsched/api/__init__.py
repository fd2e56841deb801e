"""Wire types: msgspec Structs for the Kubernetes and Volcano objects we read and write."""

from asyncsched.api.batch import Job, JobSpec, JobStatus, LifecyclePolicy, TaskSpec
from asyncsched.api.bus import Command
from asyncsched.api.core import Node, Pod, PriorityClass
from asyncsched.api.meta import Condition, ObjectMeta, OwnerReference
from asyncsched.api.quantity import QuantityError, parse_quantity, to_units
from asyncsched.api.volcano import GROUP_NAME_ANNOTATION, PodGroup, Queue

KubeObject = Pod | Node | PodGroup | Queue | PriorityClass

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "Command",
    "Condition",
    "Job",
    "JobSpec",
    "JobStatus",
    "KubeObject",
    "LifecyclePolicy",
    "Node",
    "ObjectMeta",
    "OwnerReference",
    "Pod",
    "PodGroup",
    "PriorityClass",
    "QuantityError",
    "Queue",
    "TaskSpec",
    "parse_quantity",
    "to_units",
]
