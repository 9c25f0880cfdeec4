"""Certificate rotation: replace tls.crt / tls.key on disk, new connections see the new
certificate, the server never serves a broken pair."""

from __future__ import annotations

import asyncio
import json
import ssl

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from vllm_sizer.operator.certificates import (CERT_FILE, KEY_FILE, generate_self_signed,
                                              write_certificates)
from vllm_sizer.operator.settings import MUTATE_PATH
from vllm_sizer.operator.webhook.server import CERTS_KEY, CertificateReloader

from .conftest import NAMESPACE, SERVICE, nginx_deployment, review

pytestmark = pytest.mark.asyncio


def bundle():
    return generate_self_signed(SERVICE, NAMESPACE, ip_addresses=["127.0.0.1"])


def der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


async def peer_cert(port: int, ca_pem: bytes) -> bytes:
    ctx = ssl.create_default_context(cadata=ca_pem.decode())
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ctx,
                                                   server_hostname="127.0.0.1")
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ssl.SSLError, ConnectionError):
            pass


async def wait_for(predicate, timeout=3.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def test_rotated_files_are_served_to_new_connections(start_webhook, tmp_path):
    first = bundle()
    write_certificates(tmp_path, first)
    hook = await start_webhook(certs=tmp_path, reload_interval=0.05)
    reloader = hook.runner.app[CERTS_KEY]
    assert await peer_cert(hook.port, first.ca_cert) == der(first.cert)

    second = bundle()  # a new CA too
    write_certificates(tmp_path, second)
    await wait_for(lambda: reloader.loads >= 2)
    assert await peer_cert(hook.port, second.ca_cert) == der(second.cert)
    with pytest.raises(ssl.SSLCertVerificationError):
        await peer_cert(hook.port, first.ca_cert)

    # the server still answers reviews over the new certificate
    ctx = ssl.create_default_context(cadata=second.ca_cert.decode())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as s:
        body = review(nginx_deployment())
        async with s.post(f"https://127.0.0.1:{hook.port}{MUTATE_PATH}", data=json.dumps(body)) as r:
            assert r.status == 200
            assert (await r.json())["response"]["allowed"] is True


async def test_a_half_written_rotation_is_refused_and_retried(start_webhook, tmp_path):
    first = bundle()
    write_certificates(tmp_path, first)
    hook = await start_webhook(certs=tmp_path, reload_interval=3600)
    reloader: CertificateReloader = hook.runner.app[CERTS_KEY]
    second = bundle()
    (tmp_path / KEY_FILE).write_bytes(second.key)  # new key, old certificate: a mismatch
    assert reloader.check() is False
    assert await peer_cert(hook.port, first.ca_cert) == der(first.cert)  # still serving
    (tmp_path / CERT_FILE).write_bytes(second.cert)  # the rest of the rotation lands
    assert reloader.check() is True
    assert await peer_cert(hook.port, second.ca_cert) == der(second.cert)
    assert reloader.check() is False  # unchanged files: nothing to do


async def test_missing_certificates_refuse_to_start(start_webhook, tmp_path):
    with pytest.raises(FileNotFoundError):
        await start_webhook(certs=tmp_path)
