"""Operator settings, read once at start-up from environment variables (the Helm chart sets
them from values / a ConfigMap) with pydantic-settings. Every variable name here is part of the
chart's contract: `OperatorSettings.env_names()` lists them, tests/helm/test_render.py and
tests/operator/test_settings.py hold the chart, manifests/ and the Dockerfile to them."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BeforeValidator, Field, ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from ..policy.settings import PolicySettings
from ..workloads import kinds as _kinds
from ..workloads.quantity import parse_quantity

log = logging.getLogger(__name__)

# ---- names shared by the server, the controller, the chart and manifests/ -----------------
WEBHOOK_PORT = 9443
METRICS_PORT = 8080
HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
# Admission routes: the webhook configurations' service paths must name these exactly.
MUTATE_PATH = "/mutate"
VALIDATE_PATH = "/validate"
MUTATING_CONFIG_NAME = "vllm-sizer-mutating"
VALIDATING_CONFIG_NAME = "vllm-sizer-validating"
CERT_SECRET_NAME = "vllm-sizer-webhook-tls"

# Workload kinds the webhooks serve and `check` sizes: (group, version, plural, kind), from the
# one kinds table (vllm_sizer/workloads/kinds.py); the controller watches WATCHED_RESOURCES
# (the same minus Pod and ReplicaSet, which come in bulk and are sized at pod creation).
SERVED_RESOURCES: tuple[tuple[str, str, str, str], ...] = _kinds.served_resources()
WATCHED_RESOURCES: tuple[tuple[str, str, str, str], ...] = _kinds.watched_resources()

Env = Mapping[str, str]
ENV_PREFIX = "VLLM_SIZER_"


# The decision's settings an install configures; the LimitRange ceiling is found per namespace.
POLICY_FIELDS = tuple(f for f in PolicySettings.model_fields if f != "limit_range_max_bytes")
# ... and the chart's flat variables for them (PolicySettings reads "1Gi" and " true " itself).
DECISION_ENV: dict[str, str] = {
    "VLLM_SIZER_MODE": "mode",
    "VLLM_SIZER_HEADROOM": "headroom",
    "VLLM_SIZER_ROUNDING": "rounding_bytes",
    "VLLM_SIZER_PIN_CPU_KV_GIB": "pin_cpu_kv_gib",
    "VLLM_SIZER_LARGEST_NODE_MEMORY": "largest_node_memory_bytes",
    "VLLM_SIZER_FAIL_CLOSED": "fail_closed",
}


def _comma_list(v: object) -> object:
    return [s.strip() for s in v.split(",") if s.strip()] if isinstance(v, str) else v


def _quantity(v: object) -> object:
    return parse_quantity(v) if isinstance(v, str) else v


def _stripped(v: object) -> object:
    return v.strip() if isinstance(v, str) else v


# "a, b,,c" → ["a", "b", "c"] (NoDecode: not JSON, as pydantic-settings reads a list by default)
CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]
Quantity = Annotated[int, BeforeValidator(_quantity)]  # "8Mi" → 8388608, a Kubernetes quantity
Flag = Annotated[bool, BeforeValidator(_stripped)]  # true/false, 1/0, yes/no, on/off

# The mapping `from_env` was given, for the duration of that call (None: os.environ).
_ENVIRON: ContextVar[Env | None] = ContextVar("vllm_sizer_environ", default=None)


class EnvironSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping instead of os.environ (what
    `from_env(env)` passes; tests never touch the process environment). The decision is read
    from its flat variables (DECISION_ENV), never as a JSON VLLM_SIZER_DECISION."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Env) -> None:
        super().__init__(settings_cls)
        # `env_vars` is what EnvSettingsSource looks fields up in (its __init__ filled it from
        # os.environ): keyed as it keys them, lower-case unless case-sensitive, without the ""
        # values when those are ignored.
        self.env_vars = {
            self._key(k): v for k, v in environ.items() if not (self.env_ignore_empty and v == "")
        }

    def _key(self, name: str) -> str:
        return name if self.case_sensitive else name.lower()

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        if field_name == "decision":  # read in __call__, from DECISION_ENV's names
            return None, field_name, False
        return super().get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        decision = {
            field: self.env_vars[self._key(name)]
            for name, field in DECISION_ENV.items()
            if self._key(name) in self.env_vars
        }
        if decision:
            data["decision"] = decision
        return data


class OperatorSettings(BaseSettings):
    """VLLM_SIZER_* environment variables → typed settings (pydantic-settings, env_prefix
    VLLM_SIZER_: a field reads VLLM_SIZER_<FIELD>, or the names its validation alias lists
    first; names match case-insensitively, as pydantic-settings' do). A variable set to "" is
    unset. Keyword arguments win over the environment; `from_env(mapping)` reads a mapping
    instead of os.environ. The decision's own settings (mode, headroom, rounding, pinned KV
    cache, largest node, fail-closed) are a PolicySettings, `decision`, read from DECISION_ENV's
    flat names; they may also be given flat (`OperatorSettings(mode="warn")`)."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # VLLM_SIZER_X="" is unset, as the chart writes an empty value
        # OperatorSettings(max_request_bytes=...), not only the alias (populate_by_name: the
        # spelling every pydantic 2 and pydantic-settings release reads)
        populate_by_name=True,
    )

    decision: PolicySettings = Field(default_factory=PolicySettings)
    namespaces: CommaList = Field(default_factory=list)  # empty: all (minus the excluded)
    excluded_namespaces: CommaList = Field(default_factory=lambda: ["kube-system"])
    # The pod's own namespace (the downward API's POD_NAMESPACE) unless set.
    operator_namespace: str = Field(
        default="vllm-sizer",
        validation_alias=AliasChoices("VLLM_SIZER_OPERATOR_NAMESPACE", "POD_NAMESPACE"),
    )
    # Where model-config ConfigMaps are listed (None: every namespace). A review reads those of
    # the object's own namespace, then those of the trusted namespace, never another's.
    model_configs_namespace: str | None = None
    # The namespace whose model configs apply to every namespace (None: model_configs_namespace
    # when set, else the operator's own namespace).
    model_configs_trusted_namespace: str | None = None
    model_configs_ttl_seconds: float = 30
    hub_fetch: Flag = False
    # huggingface_hub's own variable, HF_ENDPOINT, as the chart sets it
    hub_endpoint: str = Field(
        default="https://huggingface.co",
        validation_alias=AliasChoices("VLLM_SIZER_HUB_ENDPOINT", "HF_ENDPOINT"),
    )
    hub_token_file: str | None = None
    hub_timeout_seconds: float = 2.0
    lookup_timeout_seconds: float = 1.5  # any outbound call made on the admission path
    cert_dir: str = "/tmp/vllm-sizer-certs"
    cert_mode: Literal["self-signed", "cert-manager", "secret"] = "self-signed"
    webhook_host: str = "0.0.0.0"
    webhook_port: int = WEBHOOK_PORT
    metrics_port: int = METRICS_PORT
    # an UPDATE review carries the object twice; a quantity ("8Mi") under the chart's name
    max_request_bytes: Quantity = Field(
        default=8 * 1024**2, validation_alias=AliasChoices("VLLM_SIZER_MAX_REQUEST_SIZE")
    )
    service_name: str = "vllm-sizer-webhook"
    # URL mode: the webhook configurations call this base URL (https://HOST:PORT) instead of the
    # Service, and the self-signed serving certificate covers HOST too (an IP SAN for an IP).
    webhook_url: str | None = None
    patch_existing: Flag = False  # controller role: mutate pre-existing objects (restarts them)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keyword arguments, then the environment (from_env's mapping, else os.environ); no
        # .env file, no secrets directory.
        environ = _ENVIRON.get()
        return init_settings, EnvironSource(
            settings_cls, os.environ if environ is None else environ
        )

    @model_validator(mode="before")
    @classmethod
    def _flat_policy_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not any(k in data for k in POLICY_FIELDS):
            return data
        decision = data.get("decision") or {}
        if isinstance(decision, PolicySettings):
            decision = decision.model_dump()
        flat = {k: data[k] for k in POLICY_FIELDS if k in data}
        rest = {k: v for k, v in data.items() if k not in flat}
        return {**rest, "decision": {**decision, **flat}}

    @classmethod
    def from_env(cls, env: Env | None = None) -> OperatorSettings:
        """The settings from this environment alone (os.environ when None), without touching
        os.environ. A value that does not parse raises SettingsError naming its variable; a
        VLLM_SIZER_* variable that is no setting is ignored with a warning (a misspelt name
        would otherwise fall back to the default unnoticed)."""
        environ = os.environ if env is None else env
        token = _ENVIRON.set(environ)
        try:
            settings = cls()
        except ValidationError as exc:
            raise SettingsError(cls._explain(exc, environ)) from None
        finally:
            _ENVIRON.reset(token)
        unknown = cls.unknown_env_names(environ)
        if unknown:
            log.warning("ignored, not vllm-sizer settings: %s", ", ".join(unknown))
        return settings

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Every variable read → the field it sets ("decision.mode" for the decision's), in
        lookup order: of a field's variables, the first one set wins. A field with an alias is
        read from VLLM_SIZER_<FIELD> too, after its aliases (populate_by_name)."""
        names = {name: f"decision.{field}" for name, field in DECISION_ENV.items()}
        for field_name, info in cls.model_fields.items():
            if field_name == "decision":
                continue
            alias = info.validation_alias
            aliases = (
                [str(choice[0]) for choice in alias.convert_to_aliases()]
                if isinstance(alias, AliasChoices)
                else [alias]
                if isinstance(alias, str)
                else []
            )
            for name in [*aliases, ENV_PREFIX + field_name.upper()]:
                names.setdefault(name, field_name)
        return names

    @classmethod
    def unknown_env_names(cls, environ: Env) -> list[str]:
        """The VLLM_SIZER_* variables in `environ` that no setting reads."""
        known = {name.upper() for name in cls.env_names()}
        return sorted(
            k for k in environ if k.upper().startswith(ENV_PREFIX) and k.upper() not in known
        )

    @classmethod
    def _explain(cls, exc: ValidationError, environ: Env) -> str:
        """One line per invalid value, each naming the variable it came from."""
        names = cls.env_names()
        upper = {k.upper(): k for k in environ}
        lines = []
        for err in exc.errors():
            loc = err["loc"]
            if len(loc) >= 2 and loc[0] == "decision":
                field = f"decision.{loc[1]}"
            else:
                field = names.get(str(loc[0]), str(loc[0])) if loc else ""
            # the field's variable that is set (an alias key in loc is a variable's name too)
            set_names = [upper[n] for n, f in names.items() if f == field and n in upper]
            where = (
                f"{set_names[0]}={environ[set_names[0]]!r}" if set_names else field or "settings"
            )
            lines.append(f"{where}: {err['msg']}")
        return "; ".join(lines)

    def policy(self, limit_range_max_bytes: int | None = None) -> PolicySettings:
        """The decision's settings for a namespace whose LimitRange max is this."""
        return self.decision.model_copy(update={"limit_range_max_bytes": limit_range_max_bytes})

    @property
    def trusted_namespace(self) -> str:
        return (
            self.model_configs_trusted_namespace
            or self.model_configs_namespace
            or self.operator_namespace
        )

    def serves_namespace(self, namespace: str | None) -> bool:
        if namespace in self.excluded_namespaces or namespace == self.operator_namespace:
            return False
        return not self.namespaces or namespace in self.namespaces
