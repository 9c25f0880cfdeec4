"""Webhook certificates without cert-manager: a self-signed CA and a serving certificate for the
webhook Service, written as tls.crt / tls.key / ca.crt (the layout of a kubernetes.io/tls Secret
mounted into the pod, and of cert-manager's), rotation checks, and the caBundle of the two webhook
configurations.

Generated with `cryptography` (Kopf's self-signed helper needs oscrypto, which fails against
OpenSSL 3 on these machines).

Pure helpers (unit-tested): `generate_ca`, `generate_serving_certificate`,
`generate_self_signed`, `service_dns_names`, `write_certificates`, `read_certificates`,
`needs_rotation`, `certificate_sans`, `not_valid_after`, `merge_ca_bundles`, `secret_body`,
`bundle_from_secret`, `ca_bundle_patch`, `current_ca_bundles`.
API helpers (take a kubernetes client API object, synchronous: run them in a thread from async
code): `patch_ca_bundles`, `ensure_certificate_secret`, `prepare_self_signed`.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from .settings import MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME

CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
CA_FILE = "ca.crt"
CA_VALIDITY = dt.timedelta(days=3650)
SERVING_VALIDITY = dt.timedelta(days=365)
ROTATE_BEFORE = dt.timedelta(days=30)
_BACKDATE = dt.timedelta(minutes=5)  # clock skew between this pod and the API server


@dataclass(frozen=True)
class CertificateBundle:
    """PEM bytes. `ca_key` is None when the CA came from elsewhere (cert-manager, a Secret)."""

    cert: bytes
    key: bytes
    ca_cert: bytes
    ca_key: bytes | None = None


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names kube-apiserver may use for a service clientConfig (it dials
    `<service>.<namespace>.svc`; the others cover in-cluster clients)."""
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def generate_ca(
    common_name: str = "vllm-sizer-webhook-ca", validity: dt.timedelta = CA_VALIDITY
) -> tuple[bytes, bytes]:
    """A self-signed CA → (cert PEM, key PEM)."""
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def generate_serving_certificate(
    ca_cert_pem: bytes,
    ca_key_pem: bytes,
    dns_names: Sequence[str],
    ip_addresses: Iterable[str] = (),
    validity: dt.timedelta = SERVING_VALIDITY,
) -> tuple[bytes, bytes]:
    """A serving certificate signed by the CA, with the given SANs → (cert PEM, key PEM)."""
    if not dns_names and not list(ip_addresses):
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise ValueError(f"the CA key must be EC or RSA, not {type(ca_key).__name__}")
    key = _new_key()
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ip_addresses]
    cn = dns_names[0] if dns_names else str(next(iter(ip_addresses)))
    now = _now()
    not_after = min(now + validity, ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn[:64])]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_encipherment=True,
                content_commitment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def generate_self_signed(
    service: str,
    namespace: str,
    *,
    ip_addresses: Iterable[str] = (),
    extra_dns_names: Iterable[str] = (),
    ca: tuple[bytes, bytes] | None = None,
    validity: dt.timedelta = SERVING_VALIDITY,
) -> CertificateBundle:
    """CA (new unless given as (cert, key)) + serving certificate for
    `<service>.<namespace>.svc` (and `.svc.cluster.local`); `ip_addresses=["127.0.0.1"]` and
    `extra_dns_names=["localhost"]` for a local (`--dev`) webhook."""
    ca_cert, ca_key = ca if ca is not None else generate_ca()
    names = service_dns_names(service, namespace) + [n for n in extra_dns_names]
    cert, key = generate_serving_certificate(
        ca_cert, ca_key, list(dict.fromkeys(names)), ip_addresses, validity
    )
    return CertificateBundle(cert=cert, key=key, ca_cert=ca_cert, ca_key=ca_key)


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_certificates(directory: str | os.PathLike[str], bundle: CertificateBundle) -> Path:
    """Write tls.key, tls.crt and ca.crt (each atomically; key 0600). The server's reloader
    tolerates seeing a new key with the old cert for a moment: it retries on its next check."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _atomic_write(d / KEY_FILE, bundle.key, 0o600)
    _atomic_write(d / CERT_FILE, bundle.cert, 0o644)
    _atomic_write(d / CA_FILE, bundle.ca_cert, 0o644)
    return d


def read_certificates(directory: str | os.PathLike[str]) -> CertificateBundle | None:
    """The bundle in a directory, or None when tls.crt or tls.key is missing. ca.crt may be
    absent (then the serving certificate stands in for it)."""
    d = Path(directory)
    try:
        cert = (d / CERT_FILE).read_bytes()
        key = (d / KEY_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        ca = (d / CA_FILE).read_bytes()
    except FileNotFoundError:
        ca = cert
    return CertificateBundle(cert=cert, key=key, ca_cert=ca)


def _first_cert(pem: bytes | str) -> x509.Certificate:
    data = pem.encode() if isinstance(pem, str) else pem
    return x509.load_pem_x509_certificate(data)


def not_valid_after(cert_pem: bytes | str) -> dt.datetime:
    return _first_cert(cert_pem).not_valid_after_utc


def needs_rotation(
    cert_pem: bytes | str | None,
    before: dt.timedelta = ROTATE_BEFORE,
    now: dt.datetime | None = None,
) -> bool:
    """True when the certificate expires within `before` (or is not yet valid, or unreadable)."""
    if not cert_pem:
        return True
    try:
        cert = _first_cert(cert_pem)
    except ValueError:
        return True
    now = now or _now()
    return cert.not_valid_before_utc > now + _BACKDATE or cert.not_valid_after_utc - before <= now


def certificate_sans(cert_pem: bytes | str) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) of a certificate's subjectAltName."""
    try:
        ext = _first_cert(cert_pem).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return [], []
    return (
        ext.value.get_values_for_type(x509.DNSName),
        [str(ip) for ip in ext.value.get_values_for_type(x509.IPAddress)],
    )


def covers(
    cert_pem: bytes | str, dns_names: Iterable[str], ip_addresses: Iterable[str] = ()
) -> bool:
    names, ips = certificate_sans(cert_pem)
    return set(dns_names) <= set(names) and {
        str(ipaddress.ip_address(i)) for i in ip_addresses
    } <= {str(i) for i in ips}


def merge_ca_bundles(
    *bundles: bytes | str | None, now: dt.datetime | None = None, limit: int | None = None
) -> bytes:
    """Concatenate CA PEMs in order, dropping duplicates and expired certificates, keeping at
    most `limit`: during a CA rotation the caBundle carries the new and the old CA, so serving
    certificates of both verify while replicas pick up the new one."""
    now = now or _now()
    out: list[bytes] = []
    seen: set[bytes] = set()
    for bundle in bundles:
        if not bundle:
            continue
        data = bundle.encode() if isinstance(bundle, str) else bundle
        for cert in x509.load_pem_x509_certificates(data):
            if cert.not_valid_after_utc <= now:
                continue
            pem = cert.public_bytes(serialization.Encoding.PEM)
            if pem not in seen:
                seen.add(pem)
                out.append(pem)
    return b"".join(out[:limit] if limit is not None else out)


# ---- Kubernetes objects ------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def secret_body(
    bundle: CertificateBundle, name: str, namespace: str, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A kubernetes.io/tls Secret with tls.crt, tls.key, ca.crt (and ca.key when we own the CA,
    so the CA survives a restart and serving certificates can be re-issued under it)."""
    data = {CERT_FILE: _b64(bundle.cert), KEY_FILE: _b64(bundle.key), CA_FILE: _b64(bundle.ca_cert)}
    if bundle.ca_key is not None:
        data["ca.key"] = _b64(bundle.ca_key)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    meta["labels"] = {"app.kubernetes.io/name": "vllm-sizer", **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": meta,
        "data": data,
    }


def bundle_from_secret(secret: Any) -> CertificateBundle | None:
    """From a Secret (dict or kubernetes client model); None when tls.crt or tls.key is missing."""
    data = secret.get("data") if isinstance(secret, dict) else getattr(secret, "data", None)
    data = data or {}

    def field(key: str) -> bytes | None:
        v = data.get(key)
        return base64.b64decode(v) if v else None

    cert, key = field(CERT_FILE), field(KEY_FILE)
    if not cert or not key:
        return None
    return CertificateBundle(
        cert=cert, key=key, ca_cert=field(CA_FILE) or cert, ca_key=field("ca.key")
    )


def current_ca_bundles(configuration: Any) -> list[str | None]:
    """The base64 caBundle of each webhook of a configuration (dict or client model)."""
    if isinstance(configuration, dict):
        return [
            ((w.get("clientConfig") or {}).get("caBundle"))
            for w in configuration.get("webhooks") or []
        ]
    webhooks = getattr(configuration, "webhooks", None) or []
    return [getattr(getattr(w, "client_config", None), "ca_bundle", None) for w in webhooks]


def ca_bundle_patch(
    configuration: Any, ca_pem: bytes, *, keep_previous: bool = False
) -> list[dict[str, Any]]:
    """RFC 6902 ops that set `clientConfig.caBundle` on every webhook of a configuration (dict
    or kubernetes client model); empty when all already carry it. `keep_previous`: the new CA
    first, then the first CA already there (a CA rotation)."""
    ops = []
    for i, have in enumerate(current_ca_bundles(configuration)):
        pem = ca_pem
        if keep_previous and have:
            try:
                pem = merge_ca_bundles(ca_pem, base64.b64decode(have), limit=2)
            except ValueError:
                pem = ca_pem
        value = _b64(pem)
        if have != value:
            ops.append(
                {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": value}
            )
    return ops


def patch_ca_bundles(
    admissionregistration_api: Any,
    ca_pem: bytes,
    names: tuple[str, str] = (MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME),
    *,
    keep_previous: bool = False,
) -> dict[str, bool]:
    """Set the caBundle of both webhook configurations through
    `kubernetes.client.AdmissionregistrationV1Api` (a JSON patch: the client sends a list body as
    application/json-patch+json). Returns {name: patched}; a configuration that does not exist
    (404) is skipped (the chart may not have created it yet)."""
    from kubernetes.client.exceptions import ApiException

    mutating, validating = names
    calls = (
        (
            mutating,
            admissionregistration_api.read_mutating_webhook_configuration,
            admissionregistration_api.patch_mutating_webhook_configuration,
        ),
        (
            validating,
            admissionregistration_api.read_validating_webhook_configuration,
            admissionregistration_api.patch_validating_webhook_configuration,
        ),
    )
    result: dict[str, bool] = {}
    for name, read, patch in calls:
        try:
            current = read(name)
        except ApiException as exc:
            if exc.status == 404:
                result[name] = False
                continue
            raise
        ops = ca_bundle_patch(current, ca_pem, keep_previous=keep_previous)
        if ops:
            patch(name, ops)
        result[name] = bool(ops)
    return result


def _resource_version(obj: Any) -> str | None:
    if isinstance(obj, dict):
        return (obj.get("metadata") or {}).get("resourceVersion")
    return getattr(getattr(obj, "metadata", None), "resource_version", None)


def ensure_certificate_secret(
    core_api: Any,
    namespace: str,
    secret_name: str,
    service: str,
    *,
    before: dt.timedelta = ROTATE_BEFORE,
    ip_addresses: Iterable[str] = (),
    extra_dns_names: Iterable[str] = (),
    attempts: int = 3,
) -> tuple[CertificateBundle, bool]:
    """Read the Secret through `kubernetes.client.CoreV1Api`; create it when missing, re-issue the
    serving certificate when it expires within `before` or does not cover the service names
    (keeping the CA while the CA itself is not due within 2 × `before`), and replace it
    (with its resourceVersion: several webhook replicas may race; the loser of a 409 reads the
    winner's Secret and uses it). Returns (bundle, changed by us).
    The caller then patches the caBundle (`patch_ca_bundles`) and writes the files
    (`write_certificates`): `prepare_self_signed` does the three in that order."""
    from kubernetes.client.exceptions import ApiException

    ip_addresses, extra_dns_names = list(ip_addresses), list(extra_dns_names)
    names = service_dns_names(service, namespace) + extra_dns_names
    for attempt in range(attempts):
        try:
            existing = core_api.read_namespaced_secret(secret_name, namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise
            existing = None
        bundle = bundle_from_secret(existing) if existing is not None else None
        if (
            bundle is not None
            and not needs_rotation(bundle.cert, before)
            and covers(bundle.cert, names, ip_addresses)
        ):
            return bundle, False
        ca = None
        if bundle is not None and bundle.ca_key and not needs_rotation(bundle.ca_cert, before * 2):
            ca = (bundle.ca_cert, bundle.ca_key)
        fresh = generate_self_signed(
            service, namespace, ip_addresses=ip_addresses, extra_dns_names=extra_dns_names, ca=ca
        )
        body = secret_body(fresh, secret_name, namespace)
        try:
            if existing is None:
                core_api.create_namespaced_secret(namespace, body)
            else:
                rv = _resource_version(existing)
                if rv:
                    body["metadata"]["resourceVersion"] = rv
                core_api.replace_namespaced_secret(secret_name, namespace, body)
        except ApiException as exc:
            if exc.status == 409 and attempt + 1 < attempts:
                continue  # another replica wrote it first: use theirs
            raise
        return fresh, True
    raise RuntimeError("unreachable")  # pragma: no cover


def prepare_self_signed(
    core_api: Any,
    admissionregistration_api: Any,
    namespace: str,
    secret_name: str,
    service: str,
    cert_dir: str | os.PathLike[str],
    *,
    before: dt.timedelta = ROTATE_BEFORE,
    names: tuple[str, str] = (MUTATING_CONFIG_NAME, VALIDATING_CONFIG_NAME),
) -> CertificateBundle:
    """cert_mode "self-signed", at start and then periodically (e.g. hourly, in a thread):
    the Secret (created or rotated), then the caBundle of both configurations (new CA first, the
    previous one kept during a CA rotation), then the files the server reloads. Files are
    rewritten only when they differ, so the reloader sees a change only on a real rotation."""
    bundle, _changed = ensure_certificate_secret(
        core_api, namespace, secret_name, service, before=before
    )
    patch_ca_bundles(admissionregistration_api, bundle.ca_cert, names, keep_previous=True)
    on_disk = read_certificates(cert_dir)
    if on_disk is None or (on_disk.cert, on_disk.key, on_disk.ca_cert) != (
        bundle.cert,
        bundle.key,
        bundle.ca_cert,
    ):
        write_certificates(cert_dir, bundle)
    return bundle
