"""A thin async client for the API server: raw JSON in and out, decoded with msgspec
(and, for the pod watch, Kubernetes' protobuf: see protobuf.py).

kubernetes-asyncio supplies what is hard to get right (kubeconfig and
in-cluster loading, token refresh, TLS); requests and watch streams go through
its aiohttp session directly, so hot-path objects are decoded into our slim
Structs instead of generated models.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import aiohttp.helpers
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from asyncsched.backends.kube.frames import FrameReader
from asyncsched.backends.kube.protobuf import ENVELOPE, PROTOBUF_WATCH, ProtobufError, status_of

__all__ = ["KubeClient", "KubeError", "connect"]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


NAMESPACE_TERMINATING = "NamespaceTerminating"
"""The cause type (``details.causes[].reason`` of a Status) of a create refused because its
namespace is being deleted."""


class KubeError(Exception):
    """A request the API server refused, or one that could not reach it."""

    def __init__(self, status: int, message: str, causes: tuple[str, ...] = ()) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.causes = causes
        """The types of the causes the server's Status named (JSON answers only)."""

    @property
    def namespace_terminating(self) -> bool:
        """A create refused because its namespace is being deleted. Every later create
        there is refused alike and the namespace's objects are going, so a controller drops
        the work rather than retrying it, as Kubernetes' own controllers do."""
        return NAMESPACE_TERMINATING in self.causes


class KubeClient:
    """Requests against one API server with the credentials of a kubeconfig or the pod."""

    def __init__(self, api: k8s_client.ApiClient) -> None:
        self._api = api
        self.host: str = str(api.configuration.host)
        self._own_session: aiohttp.ClientSession | None = None
        self._proxy: tuple[str | None, aiohttp.BasicAuth | None] | None = None

    async def close(self) -> None:
        if self._own_session is not None:
            await self._own_session.close()
        await self._api.close()

    async def _headers(
        self, content_type: str = "application/json", accept: str = "application/json"
    ) -> dict[str, str]:
        headers = {"Accept": accept, "Content-Type": content_type}
        query: list[Any] = []
        await self._api.update_params_for_auth(headers, query, ["BearerToken"])
        return headers

    @property
    def _session(self) -> aiohttp.ClientSession:
        """kubernetes-asyncio's connection pool (its TLS settings), without ``trust_env``.

        With ``trust_env`` aiohttp looks for ~/.netrc in a worker thread on every
        request: a thread hop per bind, which waits for the GIL while a session runs
        in another thread. A netrc entry could never have helped (with our
        Authorization header aiohttp raises on it), and the proxy variables that
        ``trust_env`` also reads are resolved once, in ``_proxy_for_host``.
        """
        if self._own_session is None:
            shared: aiohttp.ClientSession = self._api.rest_client.pool_manager
            self._own_session = aiohttp.ClientSession(
                connector=shared.connector, connector_owner=False, trust_env=False
            )
        return self._own_session

    def _proxy_for_host(self) -> tuple[str | None, aiohttp.BasicAuth | None]:
        """HTTPS_PROXY / HTTP_PROXY / NO_PROXY for the API server, as ``trust_env`` read them."""
        if self._proxy is None:
            try:
                url, auth = aiohttp.helpers.get_env_proxy_for_url(URL(self.host))
                self._proxy = (str(url), auth)
            except LookupError:
                self._proxy = (None, None)
        return self._proxy

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        timeout: float = 30.0,
    ) -> bytes:
        """Send one request; return the body, or raise KubeError with the server's message."""
        proxy, proxy_auth = self._proxy_for_host()
        try:
            async with self._session.request(
                method,
                self.host + path,
                params=params,
                data=body,
                headers=await self._headers(content_type, accept),
                timeout=aiohttp.ClientTimeout(total=timeout),
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as response:
                data = await response.read()
                if response.status >= 300:
                    raise KubeError(response.status, *_refusal(data, response.reason))
                return data
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise KubeError(0, f"cannot reach the API server at {self.host}: {exc}") from None

    async def get(
        self, path: str, params: dict[str, str] | None = None, accept: str = "application/json"
    ) -> bytes:
        return await self.request("GET", path, params=params, accept=accept)

    async def post(self, path: str, body: bytes) -> bytes:
        return await self.request("POST", path, body=body)

    async def put(self, path: str, body: bytes) -> bytes:
        return await self.request("PUT", path, body=body)

    async def patch(self, path: str, body: bytes, content_type: str = MERGE_PATCH) -> bytes:
        return await self.request("PATCH", path, body=body, content_type=content_type)

    async def stream(
        self, path: str, params: dict[str, str], timeout: float
    ) -> AsyncIterator[bytes]:
        """The lines of a watch; ends when the server closes it or ``timeout`` passes."""
        async with self._watching(path, params, timeout, "application/json") as content:
            async for line in content:
                if line.strip():
                    yield line

    async def stream_protobuf(
        self, path: str, params: dict[str, str], timeout: float
    ) -> AsyncIterator[list[bytes]]:
        """The frames of a protobuf watch (each a WatchEvent message), in the batches that
        arrived together; ends when the server closes it or ``timeout`` passes."""
        async with self._watching(path, params, timeout, PROTOBUF_WATCH) as content:
            frames = FrameReader()
            while chunk := await content.readany():
                if batch := frames.feed(chunk):
                    yield batch
            if frames.partial:
                raise KubeError(0, f"watch of {path} broke inside a frame")

    @contextlib.asynccontextmanager
    async def _watching(
        self, path: str, params: dict[str, str], timeout: float, accept: str
    ) -> AsyncIterator[aiohttp.StreamReader]:
        """A watch's body, read inside; a broken connection becomes KubeError and the
        ``timeout`` passing ends the read quietly."""
        proxy, proxy_auth = self._proxy_for_host()
        try:
            async with self._session.get(
                self.host + path,
                params=params,
                headers=await self._headers(accept=accept),
                timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=10),
                proxy=proxy,
                proxy_auth=proxy_auth,
            ) as response:
                if response.status >= 300:
                    data = await response.read()
                    raise KubeError(response.status, *_refusal(data, response.reason))
                yield response.content
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(0, f"watch of {path} broke: {exc}") from None
        except TimeoutError:
            return


def _refusal(data: bytes, fallback: str | None) -> tuple[str, tuple[str, ...]]:
    """The message of an error answer, and the types of the causes its Status names."""
    if data.startswith(ENVELOPE):
        try:
            return status_of(data)[1] or fallback or "", ()
        except ProtobufError:
            return fallback or "", ()
    try:
        status = json.loads(data)
        message = str(status.get("message") or fallback or "")
        found = (status.get("details") or {}).get("causes") or ()
        kinds = tuple(str(c["reason"]) for c in found if c.get("reason"))
        causes = [str(c["message"]) for c in found if c.get("message")]
        # the causes say what the message does not: which budget refused an eviction
        return (f"{message} ({'; '.join(causes)})" if causes else message), kinds
    except (ValueError, AttributeError, TypeError):
        return data[:200].decode(errors="replace") or (fallback or ""), ()


DEFAULT_CONNECTIONS = 100
"""Connections to the API server a client holds at most (kubernetes-asyncio's default):
every request and open watch holds one."""


async def connect(
    kubeconfig: str | None, context: str | None = None, connections: int = DEFAULT_CONNECTIONS
) -> KubeClient:
    """Load credentials and check the server answers: ``kubeconfig``, else $KUBECONFIG,
    else in-cluster, else ~/.kube/config (kubectl's order). ``connections``: the most held
    at once (a request waits for one beyond that).

    Raises KubeError with one clear line when the kubeconfig is unusable or the
    server cannot be reached.
    """
    configuration = k8s_client.Configuration()
    configuration.connection_pool_maxsize = connections
    loader_log = logging.getLogger("kubernetes_asyncio.config")
    level = loader_log.level
    loader_log.setLevel(logging.ERROR)  # its warnings ("Config not found") would precede ours
    try:
        if kubeconfig:
            await k8s_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        else:
            listed = os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
            if not any(os.path.isfile(p) for p in listed.split(os.pathsep) if p):
                raise KubeError(
                    0,
                    f"no kubeconfig found (looked for {listed}): pass --kubeconfig PATH, "
                    "set KUBECONFIG, or run inside a cluster",
                )
            await k8s_config.load_kube_config(context=context, client_configuration=configuration)
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = kubeconfig or "the default kubeconfig"
        raise KubeError(0, f"cannot use {where}: {exc}") from None
    except yaml.YAMLError:
        raise KubeError(0, f"cannot use {kubeconfig}: it is not YAML") from None
    finally:
        loader_log.setLevel(level)
    client = KubeClient(k8s_client.ApiClient(configuration))
    try:
        await client.request("GET", "/version", timeout=10)
    except KubeError:
        await client.close()
        raise
    return client
