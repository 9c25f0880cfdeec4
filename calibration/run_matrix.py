"""Run the rows of a matrix file in order, skipping rows already measured.

    /work/venv-vllm/bin/python -m calibration.run_matrix calibration/matrix.yaml \
        [--csv calibration/measurements.csv] [--until 08:15] [--only ID,...] \
        [--dry-run] [--commit]

A row counts as measured when measurements.csv has a row with the same key
(all parameters; see RunSpec.key) and outcome ok, oom or timeout; "error" rows
are run again (the error row stays in the CSV as a record).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import fnmatch
import os
import signal
import subprocess
import sys

from .results import append_row, done_keys, read_rows
from .runner import DEFAULT_MODELS_DIR, RunSpec, run_one, spec_from_dict

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_matrix(path: str) -> tuple[dict[str, object], list[RunSpec]]:
    import yaml  # pyyaml

    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    defaults = dict(doc.get("defaults") or {})
    specs = []
    ids = set()
    for entry in doc.get("runs") or []:
        d = dict(defaults)
        d.update(entry or {})
        spec = spec_from_dict(d)
        if spec.run_id in ids:
            raise ValueError(f"duplicate run id {spec.run_id!r} in {path}")
        ids.add(spec.run_id)
        specs.append(spec)
    return doc.get("settings") or {}, specs


def pending(specs: list[RunSpec], csv_path: str, retry_errors: bool = True) -> list[RunSpec]:
    done = done_keys(read_rows(csv_path), retry_errors=retry_errors)
    return [s for s in specs if s.key() not in done]


def _past(until: str | None) -> bool:
    if not until:
        return False
    now = _dt.datetime.utcnow()
    hh, mm = (int(x) for x in until.split(":"))
    return (now.hour, now.minute) >= (hh, mm)


def _commit(csv_path: str, msg: str) -> None:
    """Commit only the CSV; retry while another git process holds the index lock
    (others commit to the same work tree)."""
    import time

    rel = os.path.relpath(csv_path, REPO_ROOT)
    for _attempt in range(10):
        try:
            a = subprocess.run(["git", "add", rel], cwd=REPO_ROOT, capture_output=True, text=True)
            c = subprocess.run(
                ["git", "commit", "-q", "-m", msg, "--", rel],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
            )
        except OSError as e:
            print(f"[run_matrix] commit failed: {e}", file=sys.stderr)
            return
        if a.returncode == 0 and c.returncode == 0:
            return
        err = (a.stderr + c.stderr).strip()
        if "index.lock" not in err:
            print(f"[run_matrix] commit: {err[:300]}", file=sys.stderr)
            return
        time.sleep(3)
    print("[run_matrix] commit gave up (index.lock)", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m calibration.run_matrix")
    ap.add_argument("matrix")
    ap.add_argument("--csv", default=os.path.join(REPO_ROOT, "calibration", "measurements.csv"))
    ap.add_argument("--python", default=None, help="interpreter with vLLM for the child")
    ap.add_argument("--models-dir", default=DEFAULT_MODELS_DIR)
    ap.add_argument("--log-dir", default="/tmp")
    ap.add_argument("--until", help="HH:MM UTC: launch no run at or after this time")
    ap.add_argument("--only", help="comma-separated run ids (globs allowed)")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--no-retry-errors", action="store_true")
    ap.add_argument("--commit", action="store_true", help="git-commit the CSV after every new row")
    args = ap.parse_args(argv)

    def _term(signum, frame):  # SIGTERM -> SystemExit, so run_one cleans up
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _term)
    settings, specs = load_matrix(args.matrix)
    until = args.until or settings.get("until")
    if args.only:
        pats = [p for p in args.only.split(",") if p]
        specs = [s for s in specs if any(fnmatch.fnmatch(s.run_id, p) for p in pats)]
    todo = pending(specs, args.csv, retry_errors=not args.no_retry_errors)
    skipped = len(specs) - len(todo)
    print(
        f"[run_matrix] {len(specs)} rows, {skipped} already measured, {len(todo)} to run",
        file=sys.stderr,
    )
    if args.dry_run:
        for s in todo:
            print(f"{s.run_id}\t{s.key()}")
        return 0
    for s in todo:
        if _past(until):
            print(f"[run_matrix] past {until} UTC; not launching {s.run_id}", file=sys.stderr)
            break
        log = os.path.join(args.log_dir, f"calib-{s.run_id}.log")
        print(
            f"[run_matrix] {_dt.datetime.utcnow():%H:%M:%S} start {s.run_id} ({s.key()}) log {log}",
            file=sys.stderr,
            flush=True,
        )
        row = run_one(s, python=args.python, models_dir=args.models_dir, log_path=log, echo=False)
        append_row(args.csv, row)
        print(
            f"[run_matrix] {_dt.datetime.utcnow():%H:%M:%S} {s.run_id}: {row['outcome']} "
            f"peak {row['peak_mib']} MiB in {row['peak_phase']} ({row['wall_s']} s) "
            f"{row['message']}",
            file=sys.stderr,
            flush=True,
        )
        if args.commit:
            _commit(args.csv, f"calibration: measured {s.run_id} ({row['outcome']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
