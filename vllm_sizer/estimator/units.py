"""Byte units and element sizes. Sizes of IEEE / OCP formats are definitions, not measurements."""

KiB = 1024
MiB = 1024**2
GiB = 1024**3

# Bytes per element of the dtypes vLLM accepts for --dtype, --kv-cache-dtype and --lora-dtype.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "fp8_ds_mla": 1,
    "int8": 1,
}


def dtype_bytes(name: str) -> float:
    """Bytes per element of a dtype name; raises KeyError for an unknown name."""
    return DTYPE_BYTES[name.lower().replace("torch.", "")]


def gib(n_bytes: float) -> float:
    return n_bytes / GiB


def format_gib(n_bytes: float) -> str:
    return f"{n_bytes / GiB:.2f} GiB"


def to_quantity(n_bytes: int) -> str:
    """A Kubernetes quantity in Mi (exact, rounded up), or Gi when it divides evenly."""
    mib = -(-int(n_bytes) // MiB)
    if mib % 1024 == 0:
        return f"{mib // 1024}Gi"
    return f"{mib}Mi"
