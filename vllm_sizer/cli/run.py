"""`vllm-sizer run`: what the container runs, and `--dev` for a laptop or the e2e suite.

Roles (`--role`, default `all`):
- `webhook`: the admission server only (TLS on settings.webhook_port, metrics and /healthz on
  settings.metrics_port), with model configs from ConfigMaps (ClusterModelConfigs) and the
  namespaces' LimitRange ceilings (ClusterLimitRanges, refreshed in the background). No Kopf: nothing on the admission path depends on Kopf, its indexes or
  peering. Stateless: run several replicas behind the Service.
- `controller`: the Kopf operator (watchers sizing existing objects, the OOM evidence pod watch),
  `standalone` by default (one replica, Recreate strategy); `--priority N` turns on Kopf peering
  instead (give each replica a DIFFERENT priority: equal priorities freeze them all). Kopf's
  liveness endpoint at `--liveness` (default http://<bind address>:<metrics_port + 1>/healthz), and on
  settings.metrics_port (8080) Prometheus metrics plus a /healthz that answers what Kopf's
  liveness endpoint answers (503 when it does not answer), so either port can be probed.
- `all`: both in one process (metrics come from the webhook server's listener).

In-cluster certificates (role webhook/all, VLLM_SIZER_CERT_MODE=self-signed, the default): the
CA and serving certificate live in the Secret settings.CERT_SECRET_NAME in the operator's
namespace (created when missing, re-issued 30 days before expiry, checked hourly); the files
are written to settings.cert_dir and the caBundle of both webhook configurations is patched.
With `cert-manager` or `secret`, the files are mounted into cert_dir and only read.

`--dev [--webhook-host HOST] [--namespace NS]`: a local process against the current kubeconfig.
It generates a self-signed CA + serving certificate for HOST (an IP SAN when HOST is an IP),
serves the webhook on HOST:port, registers MutatingWebhookConfiguration
`vllm-sizer-dev-mutating` and ValidatingWebhookConfiguration `vllm-sizer-dev-validating` with
`url: https://HOST:port/mutate|validate` and failurePolicy Ignore (so a crashed run blocks
nothing), and DELETES both on exit, SIGINT and SIGTERM included (Kopf's managed mode would only
empty them). HOST must be an address the API server can reach: 127.0.0.1 for an API server on
this machine; the docker network gateway (e.g. 172.18.0.1) for kind.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import signal
import sys
import tempfile
from typing import Any

from ..operator.settings import (
    CERT_SECRET_NAME,
    HEALTH_PATH,
    MUTATING_CONFIG_NAME,
    VALIDATING_CONFIG_NAME,
    OperatorSettings,
)
from ..workloads.api_names import DEV_LABEL

log = logging.getLogger("vllm_sizer.run")
DEV_MUTATING = "vllm-sizer-dev-mutating"
DEV_VALIDATING = "vllm-sizer-dev-validating"
CERT_CHECK_INTERVAL = 3600.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run the operator (webhook server, controller, or both)",
        description="Run vllm-sizer in a cluster (--role) or locally against the current "
        "kubeconfig (--dev). Settings come from VLLM_SIZER_* environment variables.",
    )
    p.add_argument("--role", choices=["webhook", "controller", "all"], default="all")
    p.add_argument(
        "--dev",
        action="store_true",
        help="local run: self-signed certificate, URL webhook configurations "
        "(failurePolicy Ignore) registered now and deleted on exit",
    )
    p.add_argument(
        "--webhook-host",
        default=None,
        help="--dev: the address the API server reaches this process at (default 127.0.0.1)",
    )
    p.add_argument(
        "--namespace",
        default=None,
        help="serve only this namespace (webhook namespaceSelector and watchers)",
    )
    p.add_argument("--port", type=int, default=None, help="webhook TLS port (default 9443)")
    p.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="metrics/health HTTP port (default 8080; -1 disables)",
    )
    p.add_argument(
        "--bind",
        default=None,
        help="listen address of every listener: webhook, metrics, Kopf liveness "
        "(default 0.0.0.0; --dev: HOST when it is an IP)",
    )
    p.add_argument(
        "--priority",
        type=int,
        default=None,
        help="controller: use Kopf peering with this priority instead of standalone",
    )
    p.add_argument(
        "--peering-name",
        default="vllm-sizer",
        help="controller with --priority: the KopfPeering object's name",
    )
    p.add_argument(
        "--liveness",
        default=None,
        help="controller: Kopf liveness endpoint URL (default "
        "http://<--bind address>:<metrics port + 1>/healthz; '' disables)",
    )
    p.add_argument("--kubeconfig", default=None, help="kubeconfig file (default: KUBECONFIG)")
    p.add_argument("--context", default=None, help="kubeconfig context")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    _logging(args)
    if args.kubeconfig:  # Kopf's login reads KUBECONFIG too
        os.environ["KUBECONFIG"] = args.kubeconfig
    try:
        settings = _settings(args)
    except Exception as exc:  # noqa: BLE001 - bad environment → one clear line
        print(f"vllm-sizer run: invalid settings: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run(args, settings))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one clear line (the traceback with -v)
        if args.verbose:
            log.exception("vllm-sizer run failed")
        print(f"vllm-sizer run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _logging(args: argparse.Namespace) -> None:
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Kopf logs two INFO lines per handled object; keep them at WARNING unless verbose.
    logging.getLogger("kopf").setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def _settings(args: argparse.Namespace) -> OperatorSettings:
    settings = OperatorSettings.from_env()
    update: dict[str, Any] = {}
    if args.namespace:
        update["namespaces"] = [args.namespace]
    if args.port is not None:
        update["webhook_port"] = args.port
    if args.metrics_port is not None:
        update["metrics_port"] = args.metrics_port
    if args.bind:
        update["webhook_host"] = args.bind
    return settings.model_copy(update=update)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _url_host(host: str) -> str:
    return f"[{host}]" if _is_ip(host) and ":" in host else host


# ------------------------------------------------------------------------------- the run
async def run(args: argparse.Namespace, settings: OperatorSettings) -> int:
    from ..operator.controller.kube import default_api_client_factory
    from ..operator.model_configs import ClusterModelConfigs

    factory = default_api_client_factory(args.kubeconfig, args.context)
    # the webhook never fetches from the Hub (no network on the admission path); with
    # hub.enabled the controller fetches unknown models into a ConfigMap the webhook reads
    lookup = ClusterModelConfigs(factory, settings, use_hub=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    cleanups: list[Any] = []
    try:
        if args.dev:
            settings = await _dev_setup(args, settings, factory, cleanups)
        elif args.role in ("webhook", "all") and settings.cert_mode == "self-signed":
            await _in_cluster_certificates(settings, factory, cleanups)

        if args.role in ("webhook", "all"):
            from ..operator.cluster_listings import ClusterLimitRanges, ClusterServingRuntimes
            from ..operator.webhook.server import start_webhook_server

            limit_ranges = ClusterLimitRanges(factory, settings)
            runtimes = ClusterServingRuntimes(factory, settings)
            for listing in (limit_ranges, runtimes):
                await listing.start()
                cleanups.append(listing.stop)
            runner = await start_webhook_server(settings, lookup, limit_ranges, runtimes=runtimes)
            cleanups.append(runner.cleanup)
            if args.dev:
                await _dev_register(args, settings, factory, cleanups, runner)

        if args.role in ("controller", "all"):
            liveness = _liveness_url(args, settings)
            if args.role == "controller" and settings.metrics_port >= 0:
                cleanups.append(await _metrics_server(settings, liveness))
            await _controller(args, settings, factory, lookup, stop, liveness)
        else:
            print(
                f"vllm-sizer: webhook role running (pid {os.getpid()}); Ctrl+C to stop",
                file=sys.stderr,
                flush=True,
            )
            await stop.wait()
    finally:
        for fn in reversed(cleanups):
            try:
                res = fn()
                if asyncio.iscoroutine(res):
                    await asyncio.wait_for(res, 15)
            except Exception as exc:  # noqa: BLE001 - keep cleaning up
                log.warning("cleanup step failed: %s", exc)
        with contextlib.suppress(Exception):
            await lookup.close()
    return 0


def _liveness_url(args: argparse.Namespace, settings: OperatorSettings) -> str | None:
    """Kopf's liveness endpoint: `--liveness` as given, else on the address every other
    listener binds (settings.webhook_host: `--bind`, VLLM_SIZER_WEBHOOK_HOST, or in --dev the
    webhook host), port metrics port + 1 (8081 when metrics are off)."""
    if args.liveness is not None:
        return args.liveness or None
    port = settings.metrics_port + 1 if settings.metrics_port > 0 else 8081
    return f"http://{_url_host(settings.webhook_host)}:{port}{HEALTH_PATH}"


async def _metrics_server(settings: OperatorSettings, liveness: str | None) -> Any:
    """Controller role: /metrics, and /healthz answering what Kopf's liveness endpoint answers
    (so a probe on the metrics port sees a stuck operator too)."""
    import aiohttp
    from aiohttp import web

    from ..operator import metrics
    from ..operator.settings import METRICS_PATH

    target = (
        (liveness or "").replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
    )

    async def metrics_page(_request: web.Request) -> web.Response:
        body, ctype = metrics.render()
        return web.Response(body=body, headers={"Content-Type": ctype})

    async def health(_request: web.Request) -> web.Response:
        if not target:
            return web.Response(text="ok")
        try:
            async with (
                aiohttp.ClientSession() as s,
                s.get(target, timeout=aiohttp.ClientTimeout(total=3)) as resp,
            ):
                return web.Response(status=resp.status, text=await resp.text())
        except Exception as exc:  # noqa: BLE001 - not live
            return web.Response(status=503, text=f"Kopf liveness unreachable: {exc}")

    app = web.Application()
    app.router.add_get(METRICS_PATH, metrics_page)
    app.router.add_get(HEALTH_PATH, health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, settings.webhook_host, settings.metrics_port).start()
    return runner.cleanup


def kopf_operator_kwargs(
    args: argparse.Namespace, settings: OperatorSettings, liveness: str | None
) -> dict[str, Any]:
    """Arguments for `kopf.operator` (besides registry and stop flag): standalone unless
    `--priority` asks for peering; the served namespaces, or cluster-wide."""
    peering = args.priority is not None
    kwargs: dict[str, Any] = dict(standalone=not peering, liveness_endpoint=liveness or None)
    if peering:
        kwargs.update(priority=args.priority, peering_name=args.peering_name)
    if settings.namespaces:
        kwargs["namespaces"] = list(settings.namespaces)
    else:
        kwargs["clusterwide"] = True
    return kwargs


async def _controller(
    args: argparse.Namespace,
    settings: OperatorSettings,
    factory: Any,
    lookup: Any,
    stop: asyncio.Event,
    liveness: str | None,
) -> None:
    import kopf
    from kopf._core.intents.registries import SmartOperatorRegistry

    from ..operator.controller import KubeApi, OomWatcher, PodVerdicts, Sizer, register
    from ..operator.controller.model_learning import ModelLearner
    from ..operator.model_configs import ClusterModelConfigs

    api = KubeApi(factory)
    controller_lookup = ClusterModelConfigs(factory, settings)  # with the Hub when enabled
    learner = (
        ModelLearner(api, controller_lookup.hub, settings.trusted_namespace)
        if controller_lookup.hub is not None
        else None
    )
    # Kopf's default registry class: it carries the kubeconfig / in-cluster login handlers (a
    # plain OperatorRegistry has none); kopf does not re-export it, hence the private import.
    registry = SmartOperatorRegistry()
    register(
        registry,
        Sizer(api, settings, controller_lookup, learner=learner),
        OomWatcher(api, settings, verdicts=PodVerdicts(api, settings)),
    )
    kwargs = kopf_operator_kwargs(args, settings, liveness)
    log.info(
        "controller starting (%s)",
        "standalone"
        if kwargs["standalone"]
        else f"peering {args.peering_name!r}, priority {args.priority}",
    )
    try:
        await kopf.operator(registry=registry, stop_flag=stop, **kwargs)
    finally:
        await controller_lookup.close()


# ------------------------------------------------------------------- in-cluster certificates
def url_sans(url: str | None) -> tuple[list[str], list[str]]:
    """(IP SANs, DNS SANs) the serving certificate needs for URL mode (VLLM_SIZER_WEBHOOK_URL):
    the URL's host, besides the Service names."""
    if not url:
        return [], []
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname or ""
    if not host:
        raise ValueError(f"VLLM_SIZER_WEBHOOK_URL={url!r} has no host")
    return ([host], []) if _is_ip(host) else ([], [host])


async def _in_cluster_certificates(
    settings: OperatorSettings, factory: Any, cleanups: list
) -> None:
    from ..operator import certificates as certs

    ips, dns = url_sans(settings.webhook_url)

    def ensure() -> bool:
        from kubernetes import client

        bundle, changed = certs.ensure_certificate_secret(
            client.CoreV1Api(factory()),
            settings.operator_namespace,
            CERT_SECRET_NAME,
            settings.service_name,
            ip_addresses=ips,
            extra_dns_names=dns,
        )
        on_disk = certs.read_certificates(settings.cert_dir)
        if on_disk is None or on_disk.cert != bundle.cert or on_disk.key != bundle.key:
            certs.write_certificates(settings.cert_dir, bundle)
        ca = (
            certs.merge_ca_bundles(on_disk.ca_cert if on_disk else None, bundle.ca_cert)
            if changed
            else bundle.ca_cert
        )
        certs.patch_ca_bundles(
            client.AdmissionregistrationV1Api(factory()),
            ca,
            (MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME),
        )
        return changed

    await asyncio.to_thread(ensure)

    async def keep_fresh() -> None:
        while True:
            await asyncio.sleep(CERT_CHECK_INTERVAL)
            try:
                if await asyncio.to_thread(ensure):
                    log.info("webhook certificate re-issued")
            except Exception as exc:  # noqa: BLE001 - retried next hour; the old one still works
                log.warning("certificate check failed: %s", exc)

    task = asyncio.create_task(keep_fresh(), name="vllm-sizer-certificates")
    cleanups.append(task.cancel)


# --------------------------------------------------------------------------------- --dev
async def _dev_setup(
    args: argparse.Namespace, settings: OperatorSettings, factory: Any, cleanups: list
) -> OperatorSettings:
    from ..operator import certificates as certs

    host = args.webhook_host or "127.0.0.1"
    cert_dir = tempfile.mkdtemp(prefix="vllm-sizer-dev-")
    ip = _is_ip(host)
    bundle = certs.generate_self_signed(
        settings.service_name,
        settings.operator_namespace,
        ip_addresses=[host] if ip else [],
        extra_dns_names=["localhost"] + ([] if ip else [host]),
    )
    certs.write_certificates(cert_dir, bundle)
    args._dev_ca = bundle.ca_cert  # handed to _dev_register
    args._dev_host = host

    def remove_dir() -> None:
        import shutil

        shutil.rmtree(cert_dir, ignore_errors=True)

    cleanups.append(remove_dir)
    update: dict[str, Any] = {"cert_dir": cert_dir, "cert_mode": "secret"}
    if not args.bind:
        update["webhook_host"] = host if ip else "0.0.0.0"
    # Make sure the API server can call us right away: load the kubeconfig now (clear error).
    await asyncio.to_thread(factory)
    return settings.model_copy(update=update)


def dev_configurations(
    settings: OperatorSettings, url: str, ca_cert: bytes
) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..operator.webhook.configurations import webhook_configurations

    mutating, validating = webhook_configurations(
        settings, url=url, ca_bundle=ca_cert, failure_policy="Ignore"
    )
    mutating["metadata"]["name"] = DEV_MUTATING
    validating["metadata"]["name"] = DEV_VALIDATING
    for cfg in (mutating, validating):
        cfg["metadata"].setdefault("labels", {})[DEV_LABEL] = "true"
    return mutating, validating


async def _dev_register(
    args: argparse.Namespace, settings: OperatorSettings, factory: Any, cleanups: list, runner: Any
) -> None:
    from ..operator.webhook.server import bound_port

    port = bound_port(runner)
    url = f"https://{_url_host(args._dev_host)}:{port}"
    mutating, validating = dev_configurations(settings, url, args._dev_ca)

    def delete() -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        api = client.AdmissionregistrationV1Api(factory())
        for fn, name in (
            (api.delete_mutating_webhook_configuration, DEV_MUTATING),
            (api.delete_validating_webhook_configuration, DEV_VALIDATING),
        ):
            try:
                fn(name, _request_timeout=10)
                print(f"vllm-sizer: deleted {name}", file=sys.stderr, flush=True)
            except ApiException as exc:
                if exc.status != 404:
                    log.warning("deleting %s failed: %s", name, exc)

    def create() -> None:
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        api = client.AdmissionregistrationV1Api(factory())
        for body, create_fn, replace_fn, read_fn in (
            (
                mutating,
                api.create_mutating_webhook_configuration,
                api.replace_mutating_webhook_configuration,
                api.read_mutating_webhook_configuration,
            ),
            (
                validating,
                api.create_validating_webhook_configuration,
                api.replace_validating_webhook_configuration,
                api.read_validating_webhook_configuration,
            ),
        ):
            name = body["metadata"]["name"]
            try:
                # the client's annotations name its model classes; a dict body is serialised
                # as it is (ApiClient.sanitize_for_serialization)
                create_fn(body, _request_timeout=10)  # type: ignore[arg-type]
            except ApiException as exc:
                if exc.status != 409:
                    raise
                current = read_fn(name, _request_timeout=10)
                meta = current.metadata
                body["metadata"]["resourceVersion"] = meta.resource_version if meta else None
                replace_fn(name, body, _request_timeout=10)  # type: ignore[arg-type]

    async def cleanup() -> None:
        await asyncio.to_thread(delete)

    cleanups.append(cleanup)  # registered first: runs even when the creation fails half-way
    await asyncio.to_thread(create)
    print(
        f"vllm-sizer --dev: webhook at {url} registered as {DEV_MUTATING} and "
        f"{DEV_VALIDATING} (failurePolicy Ignore); they are deleted on exit",
        file=sys.stderr,
        flush=True,
    )
