"""The webhook role: AdmissionReview handling (admission.py), the thin aiohttp server
(server.py) and the webhook configuration objects (configurations.py)."""

from .admission import (
    Admission,
    AdmissionRequest,
    BadReview,
    answer_for,
    parse_review,
    review_response,
)
from .configurations import mutating_configuration, validating_configuration, webhook_configurations
from .server import (
    CertificateReloader,
    bound_port,
    build_app,
    metrics_bound_port,
    start_webhook_server,
)

__all__ = [
    "Admission",
    "AdmissionRequest",
    "BadReview",
    "CertificateReloader",
    "answer_for",
    "bound_port",
    "build_app",
    "metrics_bound_port",
    "mutating_configuration",
    "parse_review",
    "review_response",
    "start_webhook_server",
    "validating_configuration",
    "webhook_configurations",
]
