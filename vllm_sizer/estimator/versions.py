"""vLLM versions: parsed from an image tag or a caller's string, compared as tuples."""

from __future__ import annotations

import re
from functools import lru_cache, total_ordering

from pydantic import BaseModel

# Newest vLLM release whose defaults this estimator encodes (PyPI vllm 0.33.0, 2026-11).
LATEST_KNOWN = (0, 33, 0)
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


@total_ordering
class VllmVersion(BaseModel, frozen=True):
    major: int
    minor: int
    patch: int = 0
    source: str = "given"  # "given" | "image tag" | "assumed latest"

    @classmethod
    def parse(cls, text: str | None, source: str = "given") -> VllmVersion:
        """Parse '0.11.0', 'v0.10.2', '0.10.1.1', 'v0.11.0-cpu'; None/unparseable → latest."""
        return _parse_cached(cls, text, source)

    @classmethod
    def _parse(cls, text: str | None, source: str) -> VllmVersion:
        if text:
            m = _VERSION_RE.search(str(text))
            if m:
                return cls(major=int(m[1]), minor=int(m[2]), patch=int(m[3] or 0), source=source)
        return cls.latest()

    @classmethod
    def latest(cls) -> VllmVersion:
        return cls(
            major=LATEST_KNOWN[0],
            minor=LATEST_KNOWN[1],
            patch=LATEST_KNOWN[2],
            source="assumed latest",
        )

    @property
    def tuple(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    def at_least(self, *v: int) -> bool:
        return (self.major, self.minor, self.patch) >= v + (0,) * (3 - len(v))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, VllmVersion):
            return NotImplemented
        return self.tuple < other.tuple

    def __eq__(self, other: object) -> bool:
        return isinstance(other, VllmVersion) and self.tuple == other.tuple

    def __hash__(self) -> int:
        return hash(self.tuple)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


@lru_cache(maxsize=256)
def _parse_cached(cls: type[VllmVersion], text: str | None, source: str) -> VllmVersion:
    return cls._parse(text, source)  # frozen: safe to share
