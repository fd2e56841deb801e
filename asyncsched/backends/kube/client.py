"""A thin async client for the API server: raw JSON in and out, decoded with msgspec.

kubernetes-asyncio supplies what is hard to get right (kubeconfig and
in-cluster loading, token refresh, TLS); requests and watch streams go through
its aiohttp session directly, so hot-path objects are decoded into our slim
Structs instead of generated models.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

__all__ = ["KubeClient", "KubeError", "connect"]

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


class KubeError(Exception):
    """A request the API server refused, or one that could not reach it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message


class KubeClient:
    """Requests against one API server with the credentials of a kubeconfig or the pod."""

    def __init__(self, api: k8s_client.ApiClient) -> None:
        self._api = api
        self.host: str = str(api.configuration.host)

    async def close(self) -> None:
        await self._api.close()

    async def _headers(self, content_type: str = "application/json") -> dict[str, str]:
        headers = {"Accept": "application/json", "Content-Type": content_type}
        query: list[Any] = []
        await self._api.update_params_for_auth(headers, query, ["BearerToken"])
        return headers

    @property
    def _session(self) -> aiohttp.ClientSession:
        session: aiohttp.ClientSession = self._api.rest_client.pool_manager
        return session

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> bytes:
        """Send one request; return the body, or raise KubeError with the server's message."""
        try:
            async with self._session.request(
                method,
                self.host + path,
                params=params,
                data=body,
                headers=await self._headers(content_type),
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                data = await response.read()
                if response.status >= 300:
                    raise KubeError(response.status, _status_message(data, response.reason))
                return data
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise KubeError(0, f"cannot reach the API server at {self.host}: {exc}") from None

    async def get(self, path: str, params: dict[str, str] | None = None) -> bytes:
        return await self.request("GET", path, params=params)

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
        try:
            async with self._session.get(
                self.host + path,
                params=params,
                headers=await self._headers(),
                timeout=aiohttp.ClientTimeout(total=timeout, sock_connect=10),
            ) as response:
                if response.status >= 300:
                    data = await response.read()
                    raise KubeError(response.status, _status_message(data, response.reason))
                async for line in response.content:
                    if line.strip():
                        yield line
        except (aiohttp.ClientError, OSError) as exc:
            raise KubeError(0, f"watch of {path} broke: {exc}") from None
        except TimeoutError:
            return


def _status_message(data: bytes, fallback: str | None) -> str:
    try:
        status = json.loads(data)
        return str(status.get("message") or fallback or "")
    except ValueError:
        return data[:200].decode(errors="replace") or (fallback or "")


async def connect(kubeconfig: str | None, context: str | None = None) -> KubeClient:
    """Load credentials (a kubeconfig, else in-cluster) and check the server answers.

    Raises KubeError with one clear line when the kubeconfig is unusable or the
    server cannot be reached.
    """
    configuration = k8s_client.Configuration()
    try:
        if kubeconfig:
            await k8s_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        else:
            await k8s_config.load_kube_config(context=context, client_configuration=configuration)
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        where = kubeconfig or "the default kubeconfig"
        raise KubeError(0, f"cannot use {where}: {exc}") from None
    client = KubeClient(k8s_client.ApiClient(configuration))
    try:
        await client.request("GET", "/version", timeout=10)
    except KubeError:
        await client.close()
        raise
    return client
