"""A node's books follow Volcano: idle, releasing and pipelined by task status."""

from __future__ import annotations

from asyncsched.model import NodeInfo, NodeTable, Resource, TaskInfo, TaskStatus
from tests.builders import node


def _task(uid: str, status: TaskStatus, cpu: int = 2000) -> TaskInfo:
    return TaskInfo(
        uid=uid,
        name=uid,
        namespace="ns",
        job="ns/j",
        resreq=Resource({"cpu": cpu, "memory": 2**30}),
        status=status,
    )


def test_running_task_uses_idle_and_releasing_counts_toward_future_idle() -> None:
    table = NodeTable()
    info = NodeInfo(node("n1", cpu="8", pods=10), table)
    info.add_task(_task("run", TaskStatus.RUNNING))
    info.add_task(_task("rel", TaskStatus.RELEASING))
    info.add_task(_task("pipe", TaskStatus.PIPELINED, cpu=1000))

    assert info.idle.get("cpu") == 4000
    assert info.releasing.get("cpu") == 2000
    assert info.pipelined.get("cpu") == 1000
    assert info.future_idle.get("cpu") == 5000
    assert info.pod_count == 2, "pipelined tasks are promised, not yet on the node"

    info.remove_task(_task("rel", TaskStatus.RELEASING))
    assert info.idle.get("cpu") == 6000 and info.releasing.get("cpu") == 0


def test_finished_tasks_hold_nothing() -> None:
    info = NodeInfo(node("n1", cpu="8"), NodeTable())
    info.add_task(_task("done", TaskStatus.SUCCEEDED))
    assert info.idle.get("cpu") == 8000 and not info.tasks


def test_new_resource_dimensions_grow_the_table() -> None:
    table = NodeTable()
    cpu_node = NodeInfo(node("cpu"), table)
    gpu_node = NodeInfo(node("gpu", gpu=8), table)
    assert "nvidia.com/gpu" in table.dimensions
    assert cpu_node.idle.get("nvidia.com/gpu") == 0
    assert gpu_node.idle.get("nvidia.com/gpu") == 8
    compact = table.compact([gpu_node.row])
    assert compact.size == 1 and int(compact.idle[0, table.index["nvidia.com/gpu"]]) == 8
