from __future__ import annotations

from asyncsched.model import Resource


def test_arithmetic_is_exact_and_immutable() -> None:
    a = Resource.from_quantities({"cpu": "1500m", "memory": "2Gi"})
    b = Resource.from_quantities({"cpu": "500m", "nvidia.com/gpu": 2})
    total = a + b
    assert total.get("cpu") == 2000
    assert total.get("nvidia.com/gpu") == 2
    assert a.get("cpu") == 1500, "operands are unchanged"
    assert (total - b) == a


def test_fit_treats_missing_dimensions_as_zero() -> None:
    gpu_pod = Resource({"cpu": 1000, "nvidia.com/gpu": 1})
    cpu_node = Resource({"cpu": 8000, "memory": 2**30})
    assert not gpu_pod.fits_in(cpu_node)
    assert gpu_pod.insufficient(cpu_node) == ["nvidia.com/gpu"]
    assert gpu_pod.fits_in_where_set(Resource({"cpu": 2000})), (
        "a capability limits only what it names"
    )


def test_best_effort_is_below_volcano_floors() -> None:
    assert Resource().is_empty()
    assert Resource({"cpu": 5}).is_empty()
    assert not Resource({"cpu": 10}).is_empty()
    assert not Resource({"nvidia.com/gpu": 1}).is_empty()
