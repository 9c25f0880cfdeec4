"""The webhook role's HTTP server: a thin aiohttp application (not Kopf's WebhookServer: Kopf's
generic admission path cost 2-4 ms of CPU per review, measured against this one) serving

- TLS on settings.webhook_host:webhook_port (9443): MUTATE_PATH and VALIDATE_PATH (POST an
  AdmissionReview v1, see admission.py for every answer), HEALTH_PATH (GET, "ok");
- plain HTTP on settings.metrics_port (8080; a negative port disables it): METRICS_PATH
  (Prometheus text from the default registry) and HEALTH_PATH.

Request bodies are limited to settings.max_request_bytes (8 MiB by default; aiohttp's default is
1 MiB, and an UPDATE review carries the object twice): a larger body gets HTTP 413, which the
API server treats as a webhook failure (failurePolicy decides).

Certificates: `tls.crt` / `tls.key` in settings.cert_dir (a mounted kubernetes.io/tls Secret,
cert-manager's layout, or what `certificates.write_certificates` wrote). Their mtime/size/inode
are checked every `reload_interval` seconds (10); on a change the pair is first loaded into a
scratch context (so a half-written rotation, e.g. a new key with the old cert, is refused and
retried on the next check, never breaking the live context), then into the server's own
SSLContext, which aiohttp keeps: new handshakes get the new certificate, open connections keep
theirs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from .. import metrics
from ..certificates import CERT_FILE, KEY_FILE
from ..model_configs import ModelConfigLookup, NoLookup
from ..settings import HEALTH_PATH, METRICS_PATH, MUTATE_PATH, VALIDATE_PATH, OperatorSettings
from .admission import MUTATE, VALIDATE, Admission, LimitRangeMax, Reader

log = logging.getLogger("vllm_sizer.webhook")

RELOAD_INTERVAL = 10.0


class CertificateReloader:
    """One server SSLContext whose certificate chain follows the files on disk."""

    def __init__(
        self,
        certfile: str | os.PathLike[str],
        keyfile: str | os.PathLike[str],
        interval: float = RELOAD_INTERVAL,
    ):
        self.certfile = Path(certfile)
        self.keyfile = Path(keyfile)
        self.interval = interval
        self.context = self._new_context()
        self.loads = 0
        self._stamp: tuple[Any, ...] | None = None
        if not self.check():
            raise FileNotFoundError(
                f"no usable certificate pair at {self.certfile} / {self.keyfile}"
            )

    @staticmethod
    def _new_context() -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def _stat(self) -> tuple[Any, ...] | None:
        try:
            a, b = os.stat(self.certfile), os.stat(self.keyfile)
        except OSError:
            return None
        return (a.st_mtime_ns, a.st_size, a.st_ino, b.st_mtime_ns, b.st_size, b.st_ino)

    def check(self) -> bool:
        """Reload when the files changed since the last successful load; True when loaded now."""
        stamp = self._stat()
        if stamp is None or stamp == self._stamp:
            return False
        try:
            cert, key = self.certfile.read_bytes(), self.keyfile.read_bytes()
            with tempfile.TemporaryDirectory(prefix="vllm-sizer-tls-") as tmp:
                c, k = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
                c.write_bytes(cert)
                k.write_bytes(key)
                os.chmod(k, 0o600)
                self._new_context().load_cert_chain(c, k)  # validate the pair first
                self.context.load_cert_chain(c, k)
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.warning(
                "certificate files %s / %s not loaded (%s); will retry",
                self.certfile,
                self.keyfile,
                exc,
            )
            return False
        self._stamp = stamp
        self.loads += 1
        if self.loads > 1:
            log.info("reloaded the webhook certificate from %s", self.certfile)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                self.check()
            except Exception:  # keep watching
                log.exception("certificate reload failed")


ADMISSION_KEY = web.AppKey("vllm_sizer_admission", Admission)
CERTS_KEY = web.AppKey("vllm_sizer_certificates", CertificateReloader)
RUNTIME_KEY = web.AppKey("vllm_sizer_runtime", dict)  # filled while starting: "metrics_runner"


async def _health(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _metrics(_request: web.Request) -> web.Response:
    body, ctype = metrics.render()
    return web.Response(body=body, headers={"Content-Type": ctype})


def _admission_route(admission: Admission, route: str) -> Callable[[web.Request], Any]:
    async def handler(request: web.Request) -> web.Response:
        body = await request.read()  # HTTPRequestEntityTooLarge (413) past client_max_size
        status, payload, ctype = await admission.handle(route, body)
        return web.Response(status=status, body=payload, content_type=ctype)

    return handler


def build_app(
    settings: OperatorSettings,
    lookup: ModelConfigLookup | None = None,
    limit_range_max: LimitRangeMax | None = None,
    *,
    read: Reader | None = None,
    runtimes: Any = None,
) -> web.Application:
    """The TLS-side application: admission routes and health. `read` replaces the workload
    reader (tests)."""
    admission = Admission(
        settings,
        lookup if lookup is not None else NoLookup(),
        limit_range_max,
        read=read,
        runtimes=runtimes,
    )
    app = web.Application(client_max_size=settings.max_request_bytes)
    app[ADMISSION_KEY] = admission
    app.router.add_post(MUTATE_PATH, _admission_route(admission, MUTATE))
    app.router.add_post(VALIDATE_PATH, _admission_route(admission, VALIDATE))
    app.router.add_get(HEALTH_PATH, _health)
    return app


def build_metrics_app() -> web.Application:
    app = web.Application()
    app.router.add_get(METRICS_PATH, _metrics)
    app.router.add_get(HEALTH_PATH, _health)
    return app


def _background(settings: OperatorSettings, reloader: CertificateReloader):
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(reloader.run(), name="vllm-sizer-cert-reloader")
        metrics_runner = None
        if settings.metrics_port >= 0:
            metrics_runner = web.AppRunner(
                build_metrics_app(), access_log=None, shutdown_timeout=2.0
            )
            await metrics_runner.setup()
            try:
                await web.TCPSite(
                    metrics_runner, settings.webhook_host, settings.metrics_port
                ).start()
            except BaseException:
                task.cancel()
                await metrics_runner.cleanup()
                raise
            app[RUNTIME_KEY]["metrics_runner"] = metrics_runner
        try:
            yield
        finally:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            if metrics_runner is not None:
                await metrics_runner.cleanup()

    return ctx


async def start_webhook_server(
    settings: OperatorSettings,
    lookup: ModelConfigLookup | None,
    limit_range_max: LimitRangeMax | None = None,
    *,
    read: Reader | None = None,
    reload_interval: float = RELOAD_INTERVAL,
    runtimes: Any = None,
) -> web.AppRunner:
    """Start the webhook (TLS) and metrics (HTTP) listeners; the caller stops both with
    `await runner.cleanup()`. Raises when the certificate files are missing or unusable, or a
    port is taken. Port 0 binds an ephemeral port: see `bound_port` / `metrics_bound_port`."""
    cert_dir = Path(settings.cert_dir)
    reloader = CertificateReloader(cert_dir / CERT_FILE, cert_dir / KEY_FILE, reload_interval)
    app = build_app(settings, lookup, limit_range_max, read=read, runtimes=runtimes)
    app[CERTS_KEY] = reloader
    app[RUNTIME_KEY] = {}
    app.cleanup_ctx.append(_background(settings, reloader))
    # shutdown_timeout: in-flight reviews finish in milliseconds, and the API server gives up
    # after timeoutSeconds (5) anyway.
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5.0)
    await runner.setup()
    try:
        site = web.TCPSite(
            runner,
            settings.webhook_host,
            settings.webhook_port,
            ssl_context=reloader.context,
            backlog=1024,
        )
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    log.info(
        "vllm-sizer webhook listening on https://%s:%s (%s, %s), metrics on :%s%s",
        settings.webhook_host,
        bound_port(runner),
        MUTATE_PATH,
        VALIDATE_PATH,
        settings.metrics_port,
        METRICS_PATH,
    )
    return runner


def bound_port(runner: web.AppRunner) -> int:
    """The webhook's TCP port (useful after binding port 0)."""
    return int(runner.addresses[0][1])


def metrics_bound_port(runner: web.AppRunner) -> int | None:
    metrics_runner = runner.app.get(RUNTIME_KEY, {}).get("metrics_runner")
    return int(metrics_runner.addresses[0][1]) if metrics_runner is not None else None
