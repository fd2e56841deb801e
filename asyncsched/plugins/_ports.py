"""Host ports: a pod asking for a node's port cannot share the node with a pod holding it.

kube-scheduler's NodePorts rules: a container port with a ``hostPort`` takes
that port of the node for its protocol (TCP when not given) on its
``hostIP``; an empty or ``0.0.0.0`` hostIP means every address of the node,
so it clashes with the same port and protocol on any address, and any
address clashes with it.
"""

from __future__ import annotations

from asyncsched.api import Pod

__all__ = ["ANY_ADDRESS", "REASON_PORTS", "HostPort", "clashes", "host_ports"]

REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
"""kube-scheduler's reason, word for word."""

ANY_ADDRESS = "0.0.0.0"

HostPort = tuple[str, int, str]
"""(protocol, port, address)."""


def host_ports(pod: Pod) -> list[HostPort]:
    """The host ports the pod's containers take, with protocol and address filled in."""
    return [
        (port.protocol or "TCP", port.host_port, port.host_ip or ANY_ADDRESS)
        for container in pod.spec.containers
        for port in container.ports
        if port.host_port > 0
    ]


def clashes(address: str, held: dict[str, int]) -> bool:
    """Does a port on ``address`` clash with the addresses (to their holders' counts) that
    pods on the node hold the same port and protocol on?"""
    if address == ANY_ADDRESS:
        return bool(held)
    return address in held or ANY_ADDRESS in held
