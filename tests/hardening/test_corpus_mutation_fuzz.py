"""Structure-aware mutation fuzzing of the published corpus through the decision, as the webhook
(`Admission.handle` on a real AdmissionReview body, both routes) and `vllm-sizer check` run it:
no crash or internal error, printable messages, patches that apply and leave valid
quantities, no lowered limit or request, no non-vLLM container touched, a second review
settled, each decision within 1 s. The mutators and checks are in corpus_mutants.py; the
budget follows tests/hostile_strategies.py's profiles (`ci` under CI=true); long runs:
scripts/fuzz_corpus.py."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from tests.hostile_strategies import HOSTILE

from .corpus_mutants import corpus, run_one

SOURCES = corpus()


def test_the_corpus_is_read():
    assert len(SOURCES) > 300  # documents of ~280 published files
    kinds = {s.doc.get("kind") for s in SOURCES}
    assert {"Deployment", "LeaderWorkerSet", "InferenceService", "RayService",
            "DynamoGraphDeployment", "Workspace"} <= kinds


@HOSTILE
@given(st.sampled_from(SOURCES), st.integers(0, 2**32 - 1), st.booleans())
def test_mutated_published_manifests_are_decided_safely(source, seed, cli):
    fails, done = run_one(source, seed, cli=cli)
    assert not fails, "\n".join(map(str, fails))


def test_a_mutant_is_reproduced_by_its_seed():
    s = SOURCES[7]
    from .corpus_mutants import mutate
    assert mutate(s.doc, random.Random(5)) == mutate(s.doc, random.Random(5))
