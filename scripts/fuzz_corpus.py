"""Long runs of the corpus mutation fuzzer (tests/hardening/corpus_mutants.py): every published
manifest's documents mutated and driven through the webhook's `Admission.handle` and
`vllm-sizer check`, failures grouped by class.

    nice python scripts/fuzz_corpus.py --mutants 20000 [--start 0] [--cli-every 3]
        [--out fuzz.jsonl] [--only kserve/]

Seed k mutates corpus source k mod N with random.Random(k): a failure line in --out (JSON:
seed, source, class, mutations, detail) is reproduced by `--start k --mutants 1`. The summary
(one line per class: count, first seed, an example) is printed at the end and every 1,000
mutants.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hardening.corpus_mutants import Failure, corpus, run_one


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mutants", type=int, default=10_000)
    p.add_argument("--start", type=int, default=0, help="first seed")
    p.add_argument("--cli-every", type=int, default=3, help="also run `check` every N mutants")
    p.add_argument("--out", default=None, help="JSON lines of every failure")
    p.add_argument("--only", default="", help="sources whose path contains this")
    args = p.parse_args()
    sources = [s for s in corpus() if args.only in str(s)]
    if not sources:
        print("no corpus source matches", file=sys.stderr)
        return 2
    out = open(args.out, "a", encoding="utf-8") if args.out else None  # noqa: SIM115
    classes: collections.Counter[str] = collections.Counter()
    first: dict[str, tuple[int, str]] = {}
    t0 = time.time()

    def summary() -> None:
        rate = (seed - args.start + 1) / max(time.time() - t0, 1e-9)
        print(
            f"-- {seed - args.start + 1} mutants, {rate:.1f}/s, {len(classes)} classes", flush=True
        )
        for cls, n in classes.most_common():
            s, text = first[cls]
            print(f"{n:6d}  {cls}  (seed {s})\n        {text[:400]}", flush=True)

    seed = args.start
    for seed in range(args.start, args.start + args.mutants):
        source = sources[seed % len(sources)]
        try:
            fails, _ = run_one(source, seed, cli=args.cli_every > 0 and seed % args.cli_every == 0)
        except Exception as exc:  # noqa: BLE001 - the harness's own failure, counted apart
            fails = [Failure(f"harness {type(exc).__name__}", str(exc)[:200], str(source))]
        for f in fails:
            classes[f.cls] += 1
            first.setdefault(f.cls, (seed, str(f)))
            if out is not None:
                row = {
                    "seed": seed,
                    "source": f.source,
                    "class": f.cls,
                    "mutations": f.mutations,
                    "detail": f.detail,
                }
                out.write(json.dumps(row, ensure_ascii=True) + "\n")
                out.flush()
        if (seed - args.start + 1) % 1000 == 0:
            summary()
    summary()
    return 1 if classes else 0


if __name__ == "__main__":
    sys.exit(main())
