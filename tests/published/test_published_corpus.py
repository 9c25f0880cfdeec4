"""The published-manifests corpus: how well vllm-sizer reads vLLM manifests from public projects.

tests/data/published/index.yaml holds, for every file, the vLLM servers it starts with what
vLLM would read (model, engine flags, memory limit) and the containers that are not vLLM. Each
server is one test: found by `read_workloads`, model and every listed flag equal to the
Workload's EngineSettings. Cases that fail today are marked xfail(strict) with the reason: a
fix turns them into XPASS, which fails until the case's line in XFAIL_SERVERS is removed.
test_summary_floor keeps the fractions found / read right / sized from going below today's.
"""

from __future__ import annotations

import json
import re

import pytest

from vllm_sizer.cli.main import main as cli_main

from . import corpus

INDEX = corpus.load_index()
SERVERS = [(e, s) for e in INDEX for s in e["servers"]]

# Floors per generation of the index. index.yaml is append-only: a generation is its first N
# entries, measured when they were added, and its floors never fall (raise one when a merge
# raises its fraction). Files added later start a new generation with its own floors, so a hard
# new file lowers no old floor and is still measured.
#   279 entries (2026-12-02): 291 servers (276 before the 6 LWS Ray workers were read as
#       multi-node worker nodes, 282 before the 9 worker containers of KServe's multinode
#       predictor, KubeRay clusters and two TPU LWS; the corpus grew from 99 servers). Servers
#       added by reading more of the same files may load a model the manifest does not name
#       (sized falls with no regression): sized_known_model guards what can be sized.
#   344 entries (2026-12-02, corpus-4): 354 servers; 65 files added (GIE, ai-on-gke, GKE samples,
#       OPEA, AWS / Akamai / community manifests, KServe docs, KubeRay llm-serve). Not read:
#       ai-on-gke/serving-llama2-70b-l4-deployment.yaml (the command is in a Dockerfile); not
#       sized: the servers whose model is a path and a few catalog gaps.
#   412 entries (2026-12-02, corpus-5): 438 servers; 68 files added (AIBrix brixbench StormService /
#       Dynamo / llm-d P/D, AIBrix samples and regressions, Dynamo recipes (wide-EP DP 16, v1beta1
#       components, TPU / XPU through DRA), llm-d guides, KubeAI catalog and benchmarks, kthena
#       ModelBooster on Ascend, GKE Llama 4 / Gemma, seans3 / mejavsh community manifests, a kro
#       ResourceGraphDefinition, kthena's controller-rendered ModelServings, llm-d's TPU v7 P/D
#       reference with a gs:// model streamed by Run:ai). Its first 395 files before corpus-5's
#       reader fixes: 99.0/98.6/90.4 % (a RayJob's `vllm serve` entrypoint not read; an Intel
#       GPU through a DRA claim template read as CUDA; a ModelServing role's worker pods not
#       read as the entry pod's engine); all 412 after them: 99.5/99.5/90.4 % (the
#       controller-rendered ModelServings are owned by their ModelBooster, so not sized there).
#       kthena/modelserving-vllm-pd-multinode.yaml's two Ray workers moved from non-vLLM to
#       worker-node servers (291 → 293 servers in the first generation, whose floors hold).
#   437 entries (2026-12-02, corpus-6): 473 servers; 25 `helm template` renders of published
#       charts with their published values (production-stack tutorials, cloud and Terraform
#       values; OPEA GenAIInfra ChatQnA / AgentQnA / VisualQnA on CPU, Gaudi, ROCm;
#       semantic-router's Dynamo chart; vLLM's own chart-helm; KubeAI's operator chart), made
#       with scripts/render_published_chart.py. Before corpus-6's fix (vLLM's api_server.py
#       copied into an image and run as a script) read right was 99.15 %; after it 99.58 %.
#   449 entries (2026-12-02, corpus-7): 481 servers; 12 `kubectl kustomize` renders of published
#       kustomizations (source: kustomize, scripts/render_published_kustomize.py): KServe's
#       e2e-gpt-oss LLMInferenceService with its LLMInferenceServiceConfigs, llm-on-openshift's
#       GPU / CPU / HPU gitops, AIBrix's development apps (mock and simulated engines: no vLLM),
#       heterogeneous samples and CRD samples, odh-model-controller's vLLM ServingRuntime
#       Templates (processed as `oc process` does), production-stack's operator samples. All 12
#       read right before and after corpus-7's reader fix (an unknown `$VLLM_ADDITIONAL_ARGS` word
#       said as vLLM's 'unexpected positional argument' error); 99.58/99.58/91.48 %.
#   catalog-9 (no new entries): the TinyLlama-1.1B-Chat-v0.3 lineage sizes KubeAI's two LoRA
#       adapter servers: sized 91.48 -> 91.89 % of 481 (known model 97.51 -> 98.07 %); every
#       generation's sized floors raised to today's values.
#   480 entries (2026-12-02, corpus-8): 512 servers; 31 files added, 22 of them from projects or
#       paths the corpus did not hold: kubernetes-sigs/wg-serving's serving catalog (5 `kubectl
#       kustomize` renders: Deployments and multi-host LWS), ROCm's k8s-device-plugin vLLM
#       example, GKE samples (Gemma / Llama 4 Maverick Deployments, a TPU RayCluster, an ADK
#       agent), AIBrix samples and tests (StormService P/D with NixlConnector, a local-NVMe
#       RayClusterFleet, Vineyard / AIBrix offloading KV caches, a mock engine), KAITO's
#       v1beta1 MIG InferenceSets, KubeAI models (GH200, S3 URL, CPU with VLLM_CPU_KVCACHE_SPACE),
#       llmaz's BackendRuntime, an OME runtime, llm-d's fast-model-actuation launcher,
#       production-stack's test values (multi-model, disaggregated prefill; helm renders).
#       Before corpus-8's fix the 31 new servers were 31 found / 27 read right / 31 sized (the
#       LWS serving catalog's PIPELINE_PARALLEL_SIZE=$(LWS_GROUP_SIZE) read as pipeline 1), the
#       whole corpus 99.61/98.83/91.99 %; after it 31/31/31 and 99.61/99.61/91.99 %; with
#       catalog-9 99.61/99.61/92.38 % (98.18 % where the model is named).
#   502 entries (2026-12-02, corpus-9): 532 servers; 22 files added: Dynamo (HAMi-sliced GPUs with
#       no worker command, a CUDA decode + Intel XPU prefill pair, the vllm-rs gRPC sidecar, DSR1
#       wide-EP on 8 GPUs, a v1beta1 checkpoint-restore TP 8, LoRA from Hugging Face in a `decode`
#       component, a GAIE XPU agg with a frontend sidecar, A.X-K2 2P2D with $(KV_TRANSFER_CONFIG),
#       DeepSeek-V4.1-Flash's generated kustomize render),
#       KServe docs (getting-started Hugging Face isvc, KEDA, v1alpha1 KV offloading), RHOAI API
#       docs' ServingRuntime + InferenceService pairs (ROCm, 4-GPU CUDA; markdown blocks joined),
#       llmaz samples (a Playground whose OpenModel is elsewhere, a stub Service, TensorRT-LLM and
#       llama.cpp Playgrounds), Knative Services running vLLM (jkwong888/gke-kueue-dws), Neural
#       Magic's nm-vllm chart (helm renders). Before corpus-9's fixes the 20 new servers were 20
#       found / 20 read right / 15 sized, but one of the 15 was a wrong number (the Playground
#       whose OpenModel is out of view sized as vLLM's default model facebook/opt-125m and
#       allowed), and Dynamo's frontend sidecar (args-only `-m dynamo.frontend` in a
#       vllm-runtime image) got an unreadable Workload; after them 20/20/14 and no Workload for
#       the sidecar; whole corpus 99.62/99.62/91.73 -> 91.54 % sized (97.49 % where the model is
#       named: skt/A.X-K2 and deepseek-ai/DeepSeek-V4.1-Flash are not in the catalog).
#   520 entries (2026-12-02, corpus-10): 549 servers; 18 files added: production-stack helm renders
#       (the chart's CI values-06 with LMCache and `--gpu_memory_utilization`, the OpenTelemetry
#       tutorial), GKE samples (Gemma 7B-it TP 2 and 1.1-2B with $(MODEL_ID), and a mis-indented
#       model-armor Deployment that is not valid YAML: nothing starts), KServe (the
#       kserve-vllmserver ClusterServingRuntime, the release smoke-test CPU LLMInferenceService,
#       the DeepSeek-R1 DeepEP-HT DP 32 sample on a PVC), KubeAI (8B FP8 k6 scenario with
#       --max-num-batched-token, a scale-from-zero CPU model, an Ollama dev model, a gs:// model),
#       Dynamo (an Intel XE agg, LLaVA E/P/VLM workers, a vLLM-Omni TTS worker, a FlexKV disagg
#       pair from a Hub-cache snapshot path, --load-format gms with the GPU Memory Service, a
#       Qwen3-VL worker with runtime LoRA). Before corpus-10's fix the 17 new servers were
#       16 found / 16 read right / 14 sized (`command: [python3, -m, dynamo.vllm.omni]` was not
#       found; in a `sh -c` script it was rewritten to a module that does not exist); after it
#       17/17/14 (Qwen3-TTS is not in the catalog; the DeepEP-HT sample loads from a PVC); whole
#       corpus 99.45/99.45 -> 99.64/99.64 % found / read right, 91.26 % sized (97.34 % where the
#       model is named).
FLOOR_DATE = "2026-12-02"
FLOOR_GENERATIONS: list[tuple[int, dict[str, float]]] = [
    (279, {"found": 0.996, "read_right": 0.996, "sized": 0.921, "sized_known_model": 0.987}),
    (344, {"found": 0.994, "read_right": 0.994, "sized": 0.912, "sized_known_model": 0.982}),
    (412, {"found": 0.995, "read_right": 0.995, "sized": 0.913, "sized_known_model": 0.981}),
    (437, {"found": 0.995, "read_right": 0.995, "sized": 0.917, "sized_known_model": 0.980}),
    (449, {"found": 0.995, "read_right": 0.995, "sized": 0.918, "sized_known_model": 0.980}),
    (480, {"found": 0.996, "read_right": 0.996, "sized": 0.923, "sized_known_model": 0.981}),
    (502, {"found": 0.996, "read_right": 0.996, "sized": 0.915, "sized_known_model": 0.974}),
    (520, {"found": 0.996, "read_right": 0.996, "sized": 0.912, "sized_known_model": 0.973}),
]
FLOORS = FLOOR_GENERATIONS[-1][1]  # the whole corpus (scripts/corpus_report.py prints these)

# XFAIL-BLOCK: `python scripts/corpus_report.py --write` rewrites the three XFAIL dicts.
# Cases that fail today (2026-12-01, after the model, pod and command-line work): case id -> reason (class: what the reader got).
# A fix turns a case into XPASS, which fails (strict) until its line is removed here.
XFAIL_SERVERS: dict[str, str] = {
    'ai-on-eks/lws-llama3-405b-trn1.yaml::LeaderWorkerSet/llama3-405b-lws/vllm-leader':
        "args only, and the image's ENTRYPOINT is not known: not found (LeaderWorkerSet llama3-405b-lws container vllm-leader)",
    'ai-on-gke/serving-llama2-70b-l4-deployment.yaml::Deployment/llm/vllm':
        "args only, and the image's ENTRYPOINT is not known: not found (Deployment llm container vllm)",
}

# Files where a container that runs no vLLM server still gets a Workload: an unreadable one
# (settings None, so a `cannot size` warning on every apply) or one read as vLLM.
XFAIL_UNTOUCHED: dict[str, str] = {
}


def _server_param(entry, server):
    sid = corpus.server_id(entry, server)
    marks = []
    if sid in XFAIL_SERVERS:
        marks.append(pytest.mark.xfail(strict=True, reason=XFAIL_SERVERS[sid]))
    return pytest.param(entry, server, id=sid, marks=marks)


def _file_param(entry):
    marks = []
    if entry["file"] in XFAIL_UNTOUCHED:
        marks.append(pytest.mark.xfail(strict=True, reason=XFAIL_UNTOUCHED[entry["file"]]))
    return pytest.param(entry, id=entry["file"], marks=marks)


def _result(entry, server) -> corpus.ServerResult:
    for f in corpus.evaluate():
        if f.entry is entry:
            for r in f.servers:
                if r.server is server:
                    return r
    raise AssertionError(f"no result for {corpus.server_id(entry, server)}")


def _file_result(entry) -> corpus.FileResult:
    return next(f for f in corpus.evaluate() if f.entry is entry)


# ---- the index itself ------------------------------------------------------------------------

def test_index_covers_the_corpus():
    files = {str(p.relative_to(corpus.DATA)) for p in corpus.DATA.rglob("*.yaml")} - {"index.yaml"}
    listed = [e["file"] for e in INDEX]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert set(listed) == files
    assert len(files) >= 60
    assert len({e["project"] for e in INDEX}) >= 12
    for e in INDEX:
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), e["file"]
        assert e["file"].split("/")[0] == e["project"]
        assert e["source"] in ("verbatim", "helm", "kustomize", "markdown")
        if e["source"] == "kustomize":
            assert e.get("render"), (e["file"], "a rendered file names its render command")
        for s in e["servers"]:
            assert {"kind", "name", "model", "flags"} <= set(s), (e["file"], s)
            assert s["model"] is not None or s.get("why"), (e["file"], s, "model null needs a why")
            unknown = set(s["flags"]) - set(corpus.EngineSettings.model_fields) - {"device"}
            assert not unknown, (e["file"], unknown)
    # every ID distinct, or the per-case marks would be ambiguous
    ids = [corpus.server_id(e, s) for e, s in SERVERS]
    assert len(ids) == len(set(ids))


def _names_in(obj) -> set[tuple[str, str, str]]:
    """(kind, name, container) for every container (and DynamoGraphDeployment service) of the
    file's objects, wherever its pod templates sit."""
    out: set[tuple[str, str, str]] = set()

    def walk(kind, name, x):
        if isinstance(x, dict):
            for key in ("containers", "initContainers"):
                for c in x.get(key) or []:
                    if isinstance(c, dict) and c.get("name"):
                        out.add((kind, name, c["name"]))
            for v in x.values():
                walk(kind, name, v)
        elif isinstance(x, list):
            for v in x:
                walk(kind, name, v)

    for doc in obj:
        kind, name = doc.get("kind"), (doc.get("metadata") or {}).get("name")
        walk(kind, name, doc)
        spec = doc.get("spec") or {}
        if kind == "DynamoGraphDeployment":
            out.update((kind, name, svc) for svc in spec.get("services") or {})
        if kind == "InferenceService" and (spec.get("predictor") or {}).get("model"):
            out.add((kind, name, "kserve-container"))  # KServe's name for the model container
        if kind == "InferenceService" and (spec.get("predictor") or {}).get("workerSpec"):
            # the multinode worker's container (kserve/kserve@aaac4e2 constants.go:503)
            out.add((kind, name, "worker-container"))
        if isinstance(spec.get("container"), dict):  # ClusterStorageContainer
            out.add((kind, name, spec["container"].get("name")))
    return out


def test_index_names_exist_in_the_files():
    """Every kind/name/container the index names is in its file (guards the truth against typos)."""
    for e in INDEX:
        docs = corpus.documents(e["file"])
        objects = {(d.get("kind"), (d.get("metadata") or {}).get("name")) for d in docs}
        names = _names_in(docs)
        for s in e["servers"] + e["non_vllm_containers"] + e.get("unasserted_containers", []):
            assert (s["kind"], s["name"]) in objects, (e["file"], s)
            if s.get("container"):
                assert (s["kind"], s["name"], s["container"]) in names, (e["file"], s)


def test_xfail_lists_name_real_cases():
    ids = {corpus.server_id(e, s) for e, s in SERVERS}
    assert set(XFAIL_SERVERS) <= ids, set(XFAIL_SERVERS) - ids
    assert set(XFAIL_UNTOUCHED) <= {e["file"] for e in INDEX}


def test_every_file_loads_as_check_loads_it():
    broken = {f.entry["file"]: f.error for f in corpus.evaluate() if f.error}
    assert not broken


# ---- per case ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("entry", "server"), [_server_param(e, s) for e, s in SERVERS])
def test_server_read_right(entry, server):
    r = _result(entry, server)
    assert r.found, r.problems
    assert not r.problems, r.problems


@pytest.mark.parametrize("entry", [_file_param(e) for e in INDEX if e["non_vllm_containers"]])
def test_non_vllm_containers_untouched(entry):
    """No Workload at all (not even an unreadable one) for a container that runs no vLLM server."""
    assert not _file_result(entry).touched


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in INDEX
                                   if e["non_vllm_containers"]])
def test_non_vllm_containers_never_patched(entry):
    """Holds today and must keep holding: the admission decision changes no non-vLLM container."""
    assert not _file_result(entry).patched


# Files where the reader gives a Workload the index does not list (same strict rule).
XFAIL_BEYOND: dict[str, str] = {
}


@pytest.mark.parametrize("entry", [
    pytest.param(e, id=e["file"], marks=[pytest.mark.xfail(strict=True, reason=XFAIL_BEYOND[e["file"]])]
                 if e["file"] in XFAIL_BEYOND else []) for e in INDEX])
def test_no_workload_beyond_the_index(entry):
    """Every Workload the reader gives is a listed vLLM server, a listed non-vLLM container
    (counted by the test above) or a container the index leaves unasserted: a reader that
    starts seeing vLLM where the index says there is none fails here."""
    assert not _file_result(entry).unexpected


# ---- the whole corpus ----------------------------------------------------------------------

def test_summary_floor(capsys):
    fr = corpus.fractions()
    with capsys.disabled():
        print(f"\npublished corpus: {fr['servers']} vLLM servers: found {fr['found']:.1%}, "
              f"read right {fr['read_right']:.1%}, sized {fr['sized']:.1%} "
              f"(sized where the manifest names the model {fr['sized_known_model']:.1%}); "
              f"floors of {FLOOR_DATE}: {FLOORS}")
    assert FLOOR_GENERATIONS[-1][0] == len(INDEX), "a file was added: measure its generation"
    for first, floors in FLOOR_GENERATIONS:
        gen = corpus.fractions(first)
        for key, floor in floors.items():
            assert gen[key] >= floor, (
                f"{key} of the first {first} files fell to {gen[key]:.3f}, below {floor:.3f}")
    # read right implies found; sized implies found
    rs = corpus.server_results()
    assert all(r.found for r in rs if r.read_right or r.sized)


def test_check_cli_reads_the_corpus(capsys, monkeypatch):
    """`vllm-sizer check -o json` on the whole corpus directory, as a user runs it: it loads
    every file (index.yaml included, as an object that is no workload), gives one row per
    Workload the reader finds, and a row with the right model for every server found."""
    from vllm_sizer.cli import check

    loaded: list[list[dict]] = []

    def spy(paths, *args, **kwargs):
        loaded.append(original(paths, *args, **kwargs))
        return loaded[-1]

    original = check.load_documents
    monkeypatch.setattr(check, "load_documents", spy)
    projects = sorted(str(d) for d in corpus.DATA.iterdir() if d.is_dir())
    rc = cli_main(["check", "-o", "json", *projects])
    captured = capsys.readouterr()
    out = captured.out
    # exit 2 only for documents that are not YAML (a tutorial's `{{HF_TOKEN}}` Secret), each said
    # with its position; never an internal error
    problems = [line for line in captured.err.splitlines() if line.startswith("vllm-sizer check:")]
    assert rc in (0, 1) or (rc == 2 and problems), out[-2000:]
    assert all(re.search(r"\.yaml: document \d+: ", p) for p in problems), problems
    rows = json.loads(out)
    # check's own loader read the same objects the corpus evaluation reads (files in path order)
    docs = loaded[0]
    mine = [d for proj in projects for f in sorted(corpus.Path(proj).rglob("*.yaml"))
            for d in corpus.documents(str(f.relative_to(corpus.DATA)))]
    assert docs == mine
    cluster = corpus.build_context(docs)
    n_workloads = sum(len(corpus.read_workloads(
        d, cluster.read_context((d.get("metadata") or {}).get("namespace")))) for d in docs
        if d.get("kind") not in corpus.CONTEXT_KINDS)
    # one row per Workload, and one per Ray worker pod that holds several engine replicas
    assert len([r for r in rows if not r["pod_parts"]]) == n_workloads
    by_object = {}
    for row in rows:
        by_object.setdefault((row["kind"], row["name"]), []).append(row)
    # one `check` run reads every file as one apply: a ConfigMap that two files define with
    # different data (wg-serving's LWS renders each carry their own `vllm-multihost-config`)
    # holds the last file's data for both, as in a cluster where both were applied; a server
    # of such a file may read another model here (its own file's reading is the test above)
    seen: dict[tuple, tuple[str, object]] = {}
    shadowed: set[str] = set()
    for e in INDEX:
        for d in corpus.documents(e["file"]):
            if d.get("kind") != "ConfigMap":
                continue
            meta = d.get("metadata") or {}
            key = (meta.get("namespace") or "default", meta.get("name"))
            if key in seen and seen[key][0] != e["file"] and seen[key][1] != d.get("data"):
                shadowed.update((seen[key][0], e["file"]))
            seen[key] = (e["file"], d.get("data"))
    for r in corpus.server_results():
        if not r.found:
            continue
        s = r.server
        got = by_object.get((s["kind"], s["name"]), [])
        assert got, r.id
        if r.read_right and s.get("model") and s.get("container"):
            assert any((row["engine"]["model"] or "").lower() == s["model"].lower()
                       and row["container"].split("/")[0] == s["container"] for row in got) or (
                r.entry["file"] in shadowed), r.id
