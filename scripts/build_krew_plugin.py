"""Build the krew plugin archive (dist/kubectl-vllm_sizer.tar.gz) and write its sha256 into
plugins/krew/vllm-sizer.yaml. The archive holds a shim that runs the installed package
(`pip install vllm-sizer` first: the plugin is the same CLI). Deterministic: the same
sources give the same bytes, so `--check` (CI) can verify the manifest's sha256.

    python scripts/build_krew_plugin.py          # build and update the manifest
    python scripts/build_krew_plugin.py --check  # exit 1 when the manifest's sha256 is stale
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "plugins" / "krew" / "vllm-sizer.yaml"
ARCHIVE = ROOT / "dist" / "kubectl-vllm_sizer.tar.gz"
SHIM = """#!/usr/bin/env sh
# kubectl vllm-sizer: runs the vllm-sizer package's CLI (install it with: pip install vllm-sizer)
for py in python3 python; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import vllm_sizer' 2>/dev/null; then
    exec "$py" -m vllm_sizer.cli.main "$@"
  fi
done
echo "kubectl vllm-sizer: the vllm-sizer Python package is not installed (pip install vllm-sizer)" >&2
exit 2
"""


def archive_bytes() -> bytes:
    buf = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.USTAR_FORMAT) as tar,
    ):
        for name, data, mode in (
            ("kubectl-vllm_sizer", SHIM.encode(), 0o755),
            ("LICENSE", b"Apache-2.0\n", 0o644),
        ):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    data = archive_bytes()
    digest = hashlib.sha256(data).hexdigest()
    text = MANIFEST.read_text()
    current = re.findall(r"sha256: ([0-9a-f]{64})", text)
    if args.check:
        if not current or any(c != digest for c in current):
            print(
                f"{MANIFEST.relative_to(ROOT)}: sha256 stale (run python scripts/build_krew_plugin.py)"
            )
            return 1
        print("krew manifest sha256 matches the archive")
        return 0
    ARCHIVE.parent.mkdir(exist_ok=True)
    ARCHIVE.write_bytes(data)
    MANIFEST.write_text(re.sub(r"sha256: [0-9a-f]{64}", f"sha256: {digest}", text))
    print(f"wrote {ARCHIVE.relative_to(ROOT)} (sha256 {digest})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
