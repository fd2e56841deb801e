"""The admission webhooks, served over TLS by the controllers process.

Volcano's paths and names, so its webhook configurations point here unchanged
but for the Service: ``/jobs/validate`` and ``/jobs/mutate`` (see
:mod:`.job_review`), ``/queues/validate`` and ``/queues/mutate`` (see
:mod:`.queue_review`), ``/cronjobs/validate`` (see :mod:`.cronjob_review`). This
module only routes requests to those reviews.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable

from aiohttp import web

from asyncsched.backends.kube.controllers import cronjob_review, job_review, queue_review

__all__ = ["serve_webhook"]

log = logging.getLogger(__name__)


async def serve_webhook(
    host: str,
    port: int,
    cert: str,
    key: str,
    job_queues: job_review.QueueLookup,
    queues: queue_review.QueueSource,
    count: Callable[[str, str], None],
) -> web.AppRunner:
    """Serve the webhooks on ``host:port`` over TLS; ``count`` is told each verdict
    (``jobs``, ``queues`` or ``cronjobs``, and e.g. ``validate-denied``)."""

    async def handle(request: web.Request) -> web.Response:
        resource, kind = request.match_info["resource"], request.match_info["kind"]
        try:
            body = await request.json()
        except ValueError:
            return web.Response(status=400, text="an AdmissionReview in JSON is expected")
        body = body if isinstance(body, dict) else {}
        if resource == "jobs":
            answer = await job_review.review(kind, body, job_queues)
        elif resource == "cronjobs":
            answer = cronjob_review.review(body)
        else:
            answer = await queue_review.review(kind, body, queues)
        allowed = answer["response"]["allowed"]
        count(resource, f"{kind}-{'allowed' if allowed else 'denied'}")
        if not allowed:
            log.info("refused: %s", answer["response"]["status"]["message"])
        return web.json_response(answer)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    app = web.Application()
    app.add_routes(
        [
            web.post("/{resource:jobs|queues}/{kind:validate|mutate}", handle),
            web.post("/{resource:cronjobs}/{kind:validate}", handle),
            web.get("/healthz", healthz),
        ]
    )
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=context).start()
    return runner
