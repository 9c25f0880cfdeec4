"""certificates.py: generation, SANs, rotation checks, Secret and caBundle helpers (pure parts,
and the API helpers against small fakes of the kubernetes client)."""

from __future__ import annotations

import base64
import datetime as dt
import os
import stat

import pytest
from cryptography import x509
from kubernetes.client.exceptions import ApiException

from vllm_sizer.operator import certificates as certs
from vllm_sizer.operator.settings import MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME


@pytest.fixture(scope="module")
def bundle():
    return certs.generate_self_signed("vllm-sizer-webhook", "vllm-sizer", ip_addresses=["127.0.0.1"])


def test_serving_certificate_names_the_service_and_chains_to_the_ca(bundle):
    dns, ips = certs.certificate_sans(bundle.cert)
    assert "vllm-sizer-webhook.vllm-sizer.svc" in dns
    assert "vllm-sizer-webhook.vllm-sizer.svc.cluster.local" in dns
    assert ips == ["127.0.0.1"]
    cert = x509.load_pem_x509_certificate(bundle.cert)
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    cert.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in eku
    assert certs.covers(bundle.cert, certs.service_dns_names("vllm-sizer-webhook", "vllm-sizer"))
    assert not certs.covers(bundle.cert, ["other.vllm-sizer.svc"])


def test_ssl_accepts_the_pair(bundle, tmp_path):
    import ssl

    certs.write_certificates(tmp_path, bundle)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    assert client.get_ca_certs()


def test_write_and_read_back(bundle, tmp_path):
    d = certs.write_certificates(tmp_path / "new", bundle)
    assert sorted(os.listdir(d)) == ["ca.crt", "tls.crt", "tls.key"]
    assert stat.S_IMODE(os.stat(d / "tls.key").st_mode) == 0o600
    back = certs.read_certificates(d)
    assert (back.cert, back.key, back.ca_cert) == (bundle.cert, bundle.key, bundle.ca_cert)
    assert certs.read_certificates(tmp_path / "nothing") is None


def test_needs_rotation():
    ca_cert, ca_key = certs.generate_ca()
    short, _ = certs.generate_serving_certificate(ca_cert, ca_key, ["a.b.svc"],
                                                  validity=dt.timedelta(days=10))
    long, _ = certs.generate_serving_certificate(ca_cert, ca_key, ["a.b.svc"])
    assert certs.needs_rotation(short) is True  # within 30 days
    assert certs.needs_rotation(short, before=dt.timedelta(days=5)) is False
    assert certs.needs_rotation(long) is False
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=340)
    assert certs.needs_rotation(long, now=later) is True
    assert certs.needs_rotation(None) is True
    assert certs.needs_rotation(b"not a certificate") is True
    assert certs.needs_rotation(long.decode()) is False  # str accepted


def test_serving_certificate_never_outlives_its_ca():
    ca_cert, ca_key = certs.generate_ca(validity=dt.timedelta(days=20))
    cert, _ = certs.generate_serving_certificate(ca_cert, ca_key, ["a.b.svc"])
    assert certs.not_valid_after(cert) <= certs.not_valid_after(ca_cert)


def test_merge_ca_bundles_keeps_both_cas_during_rotation():
    a, _ = certs.generate_ca("a")
    b, _ = certs.generate_ca("b")
    merged = certs.merge_ca_bundles(a, b, a)
    assert len(x509.load_pem_x509_certificates(merged)) == 2
    future = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=4000)
    assert certs.merge_ca_bundles(a, b, now=future) == b""


def test_secret_round_trip(bundle):
    body = certs.secret_body(bundle, "vllm-sizer-webhook-tls", "vllm-sizer")
    assert body["type"] == "kubernetes.io/tls"
    assert set(body["data"]) == {"tls.crt", "tls.key", "ca.crt", "ca.key"}
    assert base64.b64decode(body["data"]["tls.crt"]) == bundle.cert
    assert certs.bundle_from_secret(body) == bundle
    assert certs.bundle_from_secret({"data": {"tls.crt": body["data"]["tls.crt"]}}) is None


def test_ca_bundle_patch(bundle):
    config = {"webhooks": [{"name": "a", "clientConfig": {"service": {}}},
                           {"name": "b", "clientConfig": {"caBundle": base64.b64encode(bundle.ca_cert).decode()}}]}
    ops = certs.ca_bundle_patch(config, bundle.ca_cert)
    assert ops == [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle",
                    "value": base64.b64encode(bundle.ca_cert).decode()}]
    import jsonpatch
    patched = jsonpatch.apply_patch(config, ops)
    assert certs.ca_bundle_patch(patched, bundle.ca_cert) == []


class FakeAdmissionApi:
    def __init__(self, configs):
        self.configs = configs
        self.patches = []

    def _read(self, name):
        if name not in self.configs:
            raise ApiException(status=404)
        return self.configs[name]

    read_mutating_webhook_configuration = _read
    read_validating_webhook_configuration = _read

    def _patch(self, name, body):
        self.patches.append((name, body))

    patch_mutating_webhook_configuration = _patch
    patch_validating_webhook_configuration = _patch


def test_patch_ca_bundles_through_the_client(bundle):
    api = FakeAdmissionApi({MUTATING_CONFIG_NAME: {"webhooks": [{"clientConfig": {}}]}})
    result = certs.patch_ca_bundles(api, bundle.ca_cert)
    assert result == {MUTATING_CONFIG_NAME: True, VALIDATING_CONFIG_NAME: False}
    assert api.patches[0][0] == MUTATING_CONFIG_NAME
    assert api.patches[0][1][0]["path"] == "/webhooks/0/clientConfig/caBundle"


class FakeCoreApi:
    def __init__(self, secret=None):
        self.secret = secret
        self.calls = []

    def read_namespaced_secret(self, name, namespace):
        if self.secret is None:
            raise ApiException(status=404)
        return self.secret

    def create_namespaced_secret(self, namespace, body):
        self.calls.append("create")
        self.secret = body

    def replace_namespaced_secret(self, name, namespace, body):
        self.calls.append("replace")
        self.secret = body


def test_ensure_certificate_secret_creates_keeps_and_rotates():
    api = FakeCoreApi()
    first, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook")
    assert changed and api.calls == ["create"]
    same, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook")
    assert not changed and same == first and api.calls == ["create"]
    # a serving certificate due for rotation is re-issued under the same CA
    short_cert, short_key = certs.generate_serving_certificate(
        first.ca_cert, first.ca_key, certs.service_dns_names("vllm-sizer-webhook", "vllm-sizer"),
        validity=dt.timedelta(days=3))
    api.secret = certs.secret_body(certs.CertificateBundle(short_cert, short_key, first.ca_cert, first.ca_key),
                                   "tls", "vllm-sizer")
    api.secret["metadata"]["resourceVersion"] = "42"
    rotated, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook")
    assert changed and api.calls == ["create", "replace"]
    assert rotated.ca_cert == first.ca_cert and rotated.cert != short_cert
    assert api.secret["metadata"]["resourceVersion"] == "42"
    assert not certs.needs_rotation(rotated.cert)


def test_ca_rotation_keeps_the_previous_ca_in_the_bundle():
    old_ca, _ = certs.generate_ca("old")
    new_ca, _ = certs.generate_ca("new")
    config = {"webhooks": [{"clientConfig": {"caBundle": base64.b64encode(old_ca).decode()}}]}
    ops = certs.ca_bundle_patch(config, new_ca, keep_previous=True)
    bundle = base64.b64decode(ops[0]["value"])
    subjects = [c.subject.rfc4514_string() for c in x509.load_pem_x509_certificates(bundle)]
    assert subjects == ["CN=new", "CN=old"]
    config["webhooks"][0]["clientConfig"]["caBundle"] = ops[0]["value"]
    assert certs.ca_bundle_patch(config, new_ca, keep_previous=True) == []  # stable
    third, _ = certs.generate_ca("third")
    ops = certs.ca_bundle_patch(config, third, keep_previous=True)
    subjects = [c.subject.rfc4514_string() for c in x509.load_pem_x509_certificates(base64.b64decode(ops[0]["value"]))]
    assert subjects == ["CN=third", "CN=new"]  # at most two


def test_ensure_certificate_secret_uses_the_winner_after_a_conflict():
    winner = certs.generate_self_signed("vllm-sizer-webhook", "vllm-sizer")

    class Racing(FakeCoreApi):
        def create_namespaced_secret(self, namespace, body):
            self.calls.append("create")
            self.secret = certs.secret_body(winner, "tls", "vllm-sizer")  # someone else's
            raise ApiException(status=409)

    api = Racing()
    got, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook")
    assert got == winner and changed is False and api.calls == ["create"]


def test_prepare_self_signed_orders_secret_bundle_files(tmp_path):
    core = FakeCoreApi()
    adm = FakeAdmissionApi({MUTATING_CONFIG_NAME: {"webhooks": [{"clientConfig": {}}]},
                            VALIDATING_CONFIG_NAME: {"webhooks": [{"clientConfig": {}}]}})
    b = certs.prepare_self_signed(core, adm, "vllm-sizer", "tls", "vllm-sizer-webhook", tmp_path)
    assert certs.read_certificates(tmp_path).cert == b.cert
    assert [n for n, _ in adm.patches] == [MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME]
    mtime = os.stat(tmp_path / "tls.crt").st_mtime_ns
    certs.prepare_self_signed(core, adm, "vllm-sizer", "tls", "vllm-sizer-webhook", tmp_path)
    assert os.stat(tmp_path / "tls.crt").st_mtime_ns == mtime  # unchanged: not rewritten


def test_url_mode_certificate_covers_the_url_host_and_is_reissued_when_it_does_not():
    """URL mode (VLLM_SIZER_WEBHOOK_URL=https://127.0.0.1:9443): the API server checks the URL's
    host against the serving certificate, so the Secret's certificate must carry it as a SAN; a
    certificate issued for the Service names only is re-issued under the same CA."""
    from vllm_sizer.cli.run import url_sans

    api = FakeCoreApi()
    service_only, _ = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook")
    ips, dns = url_sans("https://127.0.0.1:9443")
    assert (ips, dns) == (["127.0.0.1"], [])
    assert url_sans("https://webhook.example:9443") == ([], ["webhook.example"])
    assert url_sans(None) == ([], [])
    bundle, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook",
                                                      ip_addresses=ips, extra_dns_names=dns)
    assert changed and bundle.ca_cert == service_only.ca_cert
    names, addresses = certs.certificate_sans(bundle.cert)
    assert addresses == ["127.0.0.1"] and "vllm-sizer-webhook.vllm-sizer.svc" in names
    again, changed = certs.ensure_certificate_secret(api, "vllm-sizer", "tls", "vllm-sizer-webhook",
                                                     ip_addresses=ips)
    assert not changed and again == bundle
