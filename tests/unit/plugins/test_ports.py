"""Host ports: a pod asking for a node's port is kept off the nodes where a pod holds it."""

from __future__ import annotations

import pytest

from asyncsched.api.core import ContainerPort, Node, Pod
from asyncsched.framework import Statement
from asyncsched.plugins._ports import REASON_PORTS
from tests.builders import host_port, pod
from tests.unit.plugins.pod_rules import filtered, host, open_session, running, task

NODES = [host("n0"), host("n1")]


@pytest.mark.parametrize(
    ("held", "asked", "clash"),
    [
        (host_port(8080), host_port(8080), True),
        (host_port(8080), host_port(9090), False),
        (host_port(8080), host_port(8080, "UDP"), False),
        (host_port(8080, "UDP"), host_port(8080, "UDP"), True),
        (host_port(8080, ip="10.0.0.1"), host_port(8080, ip="10.0.0.2"), False),
        (host_port(8080, ip="10.0.0.1"), host_port(8080, ip="10.0.0.1"), True),
        (host_port(8080, ip="10.0.0.1"), host_port(8080), True),
        (host_port(8080), host_port(8080, ip="10.0.0.2"), True),
        (host_port(8080, ip="0.0.0.0"), host_port(8080, ip="10.0.0.2"), True),
        (ContainerPort(container_port=8080), host_port(8080), False),
    ],
)
def test_same_port_and_protocol_on_an_overlapping_address_clash(
    held: ContainerPort, asked: ContainerPort, clash: bool
) -> None:
    ssn = open_session([*NODES, running("holder", "n0", ports=[held]), pod("p", ports=[asked])])
    assert filtered(ssn, "p") == ({REASON_PORTS: ["n0"]} if clash else {})


def test_a_pod_placed_in_a_statement_holds_its_port_until_discarded() -> None:
    ssn = open_session([*NODES, *(pod(f"p{i}", ports=[host_port(80)]) for i in range(2))])
    stmt = Statement(ssn)
    stmt.allocate(task(ssn, "p0"), ssn.nodes["n1"])
    assert filtered(ssn, "p1") == {REASON_PORTS: ["n1"]}
    stmt.discard()
    assert filtered(ssn, "p1") == {}


def test_the_switch_turns_the_filter_off() -> None:
    objects: list[Node | Pod] = [
        *NODES,
        running("holder", "n0", ports=[host_port(80)]),
        pod("p", ports=[host_port(80)]),
    ]
    ssn = open_session(objects, predicates={"predicate.NodePortsEnable": False})
    assert filtered(ssn, "p") == {}
