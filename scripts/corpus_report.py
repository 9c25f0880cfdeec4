#!/usr/bin/env python3
"""Per-project table of how vllm-sizer reads the published-manifests corpus.

    python scripts/corpus_report.py            # table per project + every server not read right
    python scripts/corpus_report.py --all      # every server, with why not sized
    python scripts/corpus_report.py --json     # machine-readable
    python scripts/corpus_report.py --xfail    # today's failures as the test's XFAIL dicts
    python scripts/corpus_report.py --write    # write them (and XFAIL_BEYOND) into the test

Run from the repository root after merging reader changes; compare with the floors in
tests/published/test_published_corpus.py (raise them when the fractions rise).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.published import corpus


def _why(r: corpus.ServerResult) -> str:
    if not r.read_right:
        return "; ".join(r.problems)
    if not r.sized:
        return "not sized: " + r.why_not_sized
    return ""


TEST = Path(__file__).resolve().parents[1] / "tests" / "published" / "test_published_corpus.py"


def _dict_block(name: str, rows: list[tuple[str, str]]) -> str:
    body = "".join(f"    {k!r}:\n        {v!r},\n" for k, v in rows)
    return f"{name}: dict[str, str] = {{\n{body}}}\n"


def _replace_dict(text: str, name: str, block: str) -> str:
    start = text.index(f"{name}: dict[str, str] = {{")
    end = text.index("\n}\n", start) + 3
    return text[:start] + block + text[end:]


def _write_xfail(files: tuple[corpus.FileResult, ...]) -> int:
    """Today's failures into the test's XFAIL_SERVERS / XFAIL_UNTOUCHED (generated reasons) and
    XFAIL_BEYOND (reasons kept where a case still fails; new cases get the reader's output)."""
    text = TEST.read_text()
    ns: dict = {}
    beyond_old = {}
    start = text.index("XFAIL_BEYOND: dict[str, str] = {")
    exec(text[start : text.index("\n}\n", start) + 3], ns)
    beyond_old = ns["XFAIL_BEYOND"]
    servers = [(r.id, corpus.xfail_reason(r)) for f in files for r in f.servers if not r.read_right]
    untouched = [
        (f.entry["file"], "a Workload for " + ", ".join(f.touched)) for f in files if f.touched
    ]
    beyond = [
        (
            f.entry["file"],
            beyond_old.get(f.entry["file"])
            or ("Workloads the index does not list: " + "; ".join(f.unexpected))[:200],
        )
        for f in files
        if f.unexpected
    ]
    text = _replace_dict(text, "XFAIL_SERVERS", _dict_block("XFAIL_SERVERS", servers))
    text = _replace_dict(text, "XFAIL_UNTOUCHED", _dict_block("XFAIL_UNTOUCHED", untouched))
    text = _replace_dict(text, "XFAIL_BEYOND", _dict_block("XFAIL_BEYOND", beyond))
    TEST.write_text(text)
    print(
        f"wrote {len(servers)} servers, {len(untouched)} untouched, {len(beyond)} beyond "
        f"into {TEST.relative_to(TEST.parents[2])}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="list every server, not only the failures")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument(
        "--xfail",
        action="store_true",
        help="print XFAIL_SERVERS / XFAIL_UNTOUCHED for the cases failing now",
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="rewrite the XFAIL dicts of tests/published/test_published_corpus.py",
    )
    args = ap.parse_args(argv)

    files = corpus.evaluate()
    if args.write:
        return _write_xfail(files)
    if args.xfail:
        print("XFAIL_SERVERS: dict[str, str] = {")
        for f in files:
            for r in f.servers:
                if not r.read_right:
                    print(f"    {r.id!r}:\n        {corpus.xfail_reason(r)!r},")
        print("}\n\nXFAIL_UNTOUCHED: dict[str, str] = {")
        for f in files:
            if f.touched:
                print(
                    f"    {f.entry['file']!r}:\n        {('a Workload for ' + ', '.join(f.touched))!r},"
                )
        print("}")
        return 0
    per: dict[str, list[corpus.ServerResult]] = defaultdict(list)
    touched: dict[str, list[str]] = defaultdict(list)
    nfiles: dict[str, int] = defaultdict(int)
    for f in files:
        p = f.entry["project"]
        nfiles[p] += 1
        per[p].extend(f.servers)
        touched[p].extend(f"{f.entry['file']}: {t}" for t in f.touched)
    fr = corpus.fractions()

    if args.json:
        print(
            json.dumps(
                {
                    "fractions": fr,
                    "projects": {
                        p: {
                            "files": nfiles[p],
                            "servers": len(rs),
                            "found": sum(r.found for r in rs),
                            "read_right": sum(r.read_right for r in rs),
                            "sized": sum(r.sized for r in rs),
                            "non_vllm_touched": touched[p],
                        }
                        for p, rs in sorted(per.items())
                    },
                    "servers": [
                        {
                            "id": r.id,
                            "found": r.found,
                            "read_right": r.read_right,
                            "sized": r.sized,
                            "problems": r.problems,
                            "why_not_sized": r.why_not_sized,
                        }
                        for rs in per.values()
                        for r in rs
                    ],
                },
                indent=2,
            )
        )
        return 0

    head = f"{'project':<18}{'files':>6}{'servers':>8}{'found':>7}{'right':>7}{'sized':>7}  non-vLLM touched"
    print(head)
    print("-" * len(head))
    for p in sorted(nfiles):
        rs = per[p]
        print(
            f"{p:<18}{nfiles[p]:>6}{len(rs):>8}{sum(r.found for r in rs):>7}"
            f"{sum(r.read_right for r in rs):>7}{sum(r.sized for r in rs):>7}  {len(touched[p]) or ''}"
        )
    total = [r for rs in per.values() for r in rs]
    print("-" * len(head))
    print(
        f"{'all':<18}{len(files):>6}{len(total):>8}{sum(r.found for r in total):>7}"
        f"{sum(r.read_right for r in total):>7}{sum(r.sized for r in total):>7}  "
        f"{sum(len(t) for t in touched.values()) or ''}"
    )
    print(
        f"\nfound {fr['found']:.1%}  read right {fr['read_right']:.1%}  sized {fr['sized']:.1%}"
        f"  (sized where the manifest names the model: {fr['sized_known_model']:.1%})\n"
    )

    classes: dict[str, int] = defaultdict(int)
    for r in total:
        if not r.read_right:
            for c in corpus.failure_class(r).split("; "):
                classes[c] += 1
        elif not r.sized:
            classes[
                "not sized: "
                + (
                    "model not named by the manifest"
                    if r.server.get("model") is None
                    else "unknown model"
                    if (
                        "unknown model" in r.why_not_sized
                        or "no config.json known" in r.why_not_sized
                    )
                    else r.why_not_sized[:60]
                )
            ] += 1
    print("failure classes:")
    for k, v in sorted(classes.items(), key=lambda kv: -kv[1]):
        print(f"  {v:>3}  {k}")
    print()
    print("why not:")
    for p in sorted(per):
        for r in per[p]:
            why = _why(r)
            if why and (args.all or not r.read_right):
                print(f"  {r.id}\n      {why}")
            elif args.all and not why:
                print(f"  {r.id}\n      ok")
        for t in touched[p]:
            print(f"  {t}\n      a Workload for a container that runs no vLLM server")
    return 0


if __name__ == "__main__":
    sys.exit(main())
