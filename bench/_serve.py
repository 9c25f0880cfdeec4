"""Bench server process: `python bench/_serve.py vllm-sizer|bare PORT CERT_DIR`.

vllm-sizer: the real webhook role (start_webhook_server) on 127.0.0.1:PORT, no metrics port.
bare: a bare aiohttp TLS server that parses the AdmissionReview and answers allow (the floor
any Python webhook can reach), on the same certificate.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import sys
from pathlib import Path

from aiohttp import web


async def bare(port: int, cert_dir: Path) -> None:
    async def allow(request: web.Request) -> web.Response:
        review = json.loads(await request.read())
        uid = review["request"]["uid"]
        return web.json_response(
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": True},
            }
        )

    app = web.Application(client_max_size=8 * 1024**2)
    app.router.add_post("/mutate", allow)
    app.router.add_post("/validate", allow)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=ctx, backlog=1024).start()
    print("ready", flush=True)
    await asyncio.Event().wait()


async def sizer(port: int, cert_dir: Path) -> None:
    from vllm_sizer.operator.model_configs import NoLookup
    from vllm_sizer.operator.settings import OperatorSettings
    from vllm_sizer.operator.webhook.server import start_webhook_server

    logging.disable(logging.INFO)
    settings = OperatorSettings(
        webhook_host="127.0.0.1", webhook_port=port, metrics_port=-1, cert_dir=str(cert_dir)
    )
    await start_webhook_server(settings, NoLookup())
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    kind, port, cert_dir = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    asyncio.run(sizer(port, cert_dir) if kind == "vllm-sizer" else bare(port, cert_dir))
