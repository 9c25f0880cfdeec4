"""Scan fetched repository snapshots (/work/.mirror/<owner>+<name>/repo) for vLLM servers and the
model ids they serve; print a TSV (id, files, projects, rule, resolved_to, example).

Heuristic by design: files are YAML/JSON/Markdown (fenced blocks only) that show a vLLM server
(vllm image, `vllm serve`, the api_server module, KServe huggingface runtime, KubeAI engine VLLM,
ray.serve.llm, llm-d images ...); ids are taken from the places vLLM reads them (positional after
`vllm serve`, --model, MODEL_ID-like env values, hf:// URIs, model_id/modelID/model_source keys,
production-stack modelURL) and must look like a Hugging Face `org/name`.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
from pathlib import Path

MIRROR = Path("/work/.mirror")
REPOS = [
    "vllm-project/production-stack",
    "vllm-project/aibrix",
    "kserve/kserve",
    "kserve/website",
    "GoogleCloudPlatform/kubernetes-engine-samples",
    "GoogleCloudPlatform/ai-on-gke",
    "awslabs/ai-on-eks",
    "awslabs/data-on-eks",
    "llm-d/llm-d",
    "llm-d/llm-d-benchmark",
    "llm-d/llm-d-inference-scheduler",
    "llm-d-incubation/llm-d-modelservice",
    "llm-d-incubation/llm-d-infra",
    "substratusai/kubeai",
    "ai-dynamo/dynamo",
    "kaito-project/kaito",
    "ray-project/kuberay",
    "kubernetes-sigs/lws",
    "kubernetes-sigs/gateway-api-inference-extension",
    "opea-project/GenAIInfra",
    "opea-project/GenAIExamples",
    "InftyAI/llmaz",
    "volcano-sh/kthena",
    "envoyproxy/ai-gateway",
    "sgl-project/ome",
    "LMCache/LMCache",
    "vllm-project/semantic-router",
    "kubernetes-sigs/inference-perf",
    "opendatahub-io/odh-model-controller",
    "rh-aiservices-bu/llm-on-openshift",
    "Azure/AKS",
    "Azure-Samples/aks-ai",
    "Azure-Samples/aks-ray-sample",
    "aws-samples/eks-workshop-v2",
    "aws-samples/aws-do-eks",
]
EXTS = (".yaml", ".yml", ".json", ".md", ".mdx", ".tpl", ".gotmpl", ".j2", ".ipynb")
SERVER = re.compile(
    r"vllm/vllm-openai|vllm-openai|vllm-cpu|vllm serve|vllm\.entrypoints|engine:\s*VLLM|"
    r"ghcr\.io/llm-d|llm-d-cuda|huggingfaceserver|kserve-huggingfaceserver|ray\.serve\.llm|"
    r"LLMInferenceService|vllm-tpu|vllm-rocm|rocm/vllm|vllm-ascend|vllm-neuron|vllm_|backend:\s*vllm|"
    r"vllm-gaudi|inference:\s*vllm|runtime:\s*vllm|vllm|kind:\s*(?:Cluster)?BaseModel|kind:\s*OpenModel|kind:\s*ModelBooster",
    re.I,
)
ID = r"[A-Za-z0-9][\w.\-]*/[A-Za-z0-9][\w.\-]*"
PATTERNS = [
    re.compile(r"vllm\s+serve\s+[\"']?(?:hf://)?(" + ID + r")"),
    re.compile(r"--model(?:[_-]?(?:name|id))?[\"']?\s*(?:=|\s|,)\s*[\"']?(?:hf://)?(" + ID + r")"),
    re.compile(r"--model[\"']?\s*\n\s*-\s*[\"']?(?:hf://)?(" + ID + r")"),
    re.compile(r"(?:hf|huggingface)://(" + ID + r")"),
    re.compile(r"huggingface\.co/(" + ID + r")"),
    re.compile(
        r"\b(?:model_id|modelID|modelId|model_source|modelURL|modelName|model_name|"
        r"model|MODEL|MODEL_ID|MODEL_NAME|LLM_MODEL_ID|LLM_MODEL|HF_MODEL_ID|MODEL_PATH|"
        r"modelRepo|repo_id|repoId|hfModelId|MODEL_REPO|VLLM_MODEL)[\"']?\s*[:=]\s*[\"']?(?:hf://)?("
        + ID
        + r")[\"']?\s*(?:$|[,#}\]\n])",
        re.M,
    ),
    re.compile(
        r"name:\s*[\"']?(?:MODEL|MODEL_ID|MODEL_NAME|LLM_MODEL_ID|LLM_MODEL|HF_MODEL_ID|"
        r"MODEL_PATH|VLLM_MODEL|MODEL_REPO|SERVED_MODEL)[\"']?\s*\n\s*value:\s*[\"']?(?:hf://)?("
        + ID
        + r")"
    ),
]
BAD_ORG = {
    "models",
    "model",
    "data",
    "mnt",
    "tmp",
    "home",
    "root",
    "opt",
    "workspace",
    "app",
    "cache",
    "v1",
    "api",
    "docs",
    "chat",
    "completions",
    "kserve",
    "serving.kserve.io",
    "apps",
    "batch",
    "vllm",
    "local",
    "var",
    "etc",
    "usr",
    "bin",
    "config",
    "src",
    "org",
    "org-name",
    "your-org",
    "example",
    "path",
    "my-org",
    "user",
    "username",
    "hf",
    "s3",
    "gs",
    "pvc",
    "storage",
    "ollama",
    "http",
    "https",
    "main",
    "blob",
    "resolve",
    "leaderworkerset.x-k8s.io",
    "ray.io",
    "inference.networking.x-k8s.io",
    "networking.k8s.io",
    "serving.knative.dev",
    "aibrix.ai",
    "kubeai.org",
    "kaito.sh",
    "nvidia.com",
    "orchestration.aibrix.ai",
    "model.aibrix.ai",
    "autoscaling.aibrix.ai",
    "llmaz.io",
    "inference.llmaz.io",
    "ome.io",
    "x-k8s.io",
    "application",
    "text",
    "image",
    "llm-d",
    "ghcr.io",
    "docker.io",
    "quay.io",
    "nvcr.io",
    "registry.k8s.io",
    "gcr.io",
    "public.ecr.aws",
    "mistral",
    "files",
    "charts",
    "templates",
    "examples",
    "scripts",
    "test",
    "tests",
}


NOT_SERVED = re.compile(
    r"^(datasets|vllm-sr|anthropic|hf-repo|cloud|your-org|org)/|^qwen/assistant$|^openai/gpt-?[0-9]|^google/gemini|^qwen/qwen3\.[0-9]-rocm",
    re.I,
)


def looks_like_id(x: str) -> bool:
    if NOT_SERVED.search(x):
        return False
    org, name = x.split("/", 1)
    if org.lower() in BAD_ORG or (
        "." in org and org.count(".") >= 1 and not re.match(r"^[\w-]+$", org.replace(".", ""))
    ):
        return False
    if re.search(
        r"\.(ya?ml|json|py|sh|md|txt|bin|safetensors|gguf|tar|gz|com|io|org)$", name, re.I
    ):
        return False
    if name.lower() in {"v1", "latest", "main", "models", "model"}:
        return False
    if re.fullmatch(r"[\d.]+", name) or re.fullmatch(r"[\d.]+", org):
        return False
    return not re.match(r"^(v\d|apps|batch)$", org)


def md_blocks(text: str) -> str:
    return "\n".join(m.group(1) for m in re.finditer(r"```[^\n]*\n(.*?)```", text, re.S))


def scan(repo_dir: Path):
    proj = repo_dir.parent.name.replace("+", "/")
    commit = subprocess.run(
        ["git", "-C", str(repo_dir), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    names = subprocess.run(
        ["git", "-C", str(repo_dir), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    names = [n for n in names if n.lower().endswith(EXTS)]
    if not names:
        return proj, commit, {}
    p = subprocess.Popen(
        ["git", "-C", str(repo_dir), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    out = {}
    for n in names:
        p.stdin.write(f"HEAD:{n}\n".encode())
        p.stdin.flush()
        header = p.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        data = p.stdout.read(size)
        p.stdout.read(1)
        if size > 2_000_000:
            continue
        text = data.decode("utf-8", "replace")
        if n.lower().endswith((".md", ".mdx")):
            text = md_blocks(text)
        if not SERVER.search(text):
            continue
        if re.search(r"inference-sim|vllm-mock|LLM-Mock|mocker-vllm", text) and not re.search(
            r"vllm/vllm-openai|vllm serve", text
        ):
            continue  # simulators and mocks that answer like vLLM but load nothing
        ids = set()
        for pat in PATTERNS:
            for m in pat.finditer(text):
                x = m.group(1).rstrip(".-")
                if looks_like_id(x):
                    ids.add(x)
        if ids:
            out[n] = ids
    p.stdin.close()
    p.wait()
    return proj, commit, out


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from vllm_sizer.estimator.names import resolve_model

    files = collections.defaultdict(set)
    projects = collections.defaultdict(set)
    example = {}
    spell = collections.defaultdict(collections.Counter)
    commits = {}
    for d in [MIRROR / r.replace("/", "+") / "repo" for r in REPOS]:
        if not d.exists():
            continue
        proj, commit, found = scan(d)
        if not found:
            continue
        commits[proj] = commit
        for path, ids in found.items():
            for i in ids:
                k = i.lower()
                files[k].add((proj, path))
                projects[k].add(proj)
                spell[k][i] += 1
                example.setdefault(k, f"{proj}:{path}")
    rows = []
    for k in files:
        name = spell[k].most_common(1)[0][0]
        r = resolve_model(name)
        rows.append(
            (
                name,
                len(files[k]),
                len(projects[k]),
                r.rule,
                r.model_id or (r.refusal or "")[:80].replace("\t", " "),
                example[k],
            )
        )
    rows.sort(key=lambda r: (-r[1], -r[2], r[0].lower()))
    print("id\tfiles\tprojects\trule\tresolved_to\texample")
    for r in rows:
        print("\t".join(str(x) for x in r))
    with open("/tmp/demand_commits.txt", "w") as f:
        for p, c in sorted(commits.items()):
            f.write(f"{p}\t{c}\n")


if __name__ == "__main__":
    main()
