"""The measured process: `python -m calibration._child SPEC.json`.

Prints phase markers `@@CALIB <phase> <json>` on stdout and, when the spec asks
for handshakes, waits for a line on stdin after each so the parent can read and
reset the cgroup peak between phases. Only this module imports vLLM.
"""

from __future__ import annotations

import json
import os
import sys
import time

MARK = "@@CALIB"


def _vm_hwm() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return -1


def mark(phase: str, handshake: bool, **info) -> None:
    info.setdefault("t", time.time())
    info.setdefault("vm_hwm", _vm_hwm())
    sys.stdout.write(f"{MARK} {phase} {json.dumps(info)}\n")
    sys.stdout.flush()
    if handshake:
        sys.stdin.readline()


def main(spec_path: str) -> int:
    with open(spec_path) as f:
        spec = json.load(f)
    hs = bool(spec.get("handshake", True))
    mark("start", hs)

    import torch
    import vllm
    from vllm import LLM, SamplingParams

    try:
        from vllm.inputs import TokensPrompt
    except ImportError:  # older layouts
        from vllm.inputs.data import TokensPrompt
    from vllm.lora.request import LoRARequest

    mark("imported", hs, vllm_version=vllm.__version__, torch_version=torch.__version__)

    kwargs = dict(
        model=spec["model_dir"],
        tokenizer=spec["model_dir"],
        dtype=spec.get("dtype", "bfloat16"),
        enforce_eager=True,
        max_num_seqs=int(spec["max_num_seqs"]),
        max_num_batched_tokens=int(spec["max_num_batched_tokens"]),
        max_model_len=int(spec["max_model_len"]),
        seed=0,
    )
    if spec.get("lora"):
        kwargs.update(
            enable_lora=True,
            max_lora_rank=int(spec["rank"]),
            max_loras=int(spec.get("max_loras", 1)),
        )
    kwargs.update(spec.get("extra_llm_kwargs") or {})
    llm = LLM(**kwargs)
    mark("init", hs)

    lora_req = None
    if spec.get("lora"):
        lora_req = LoRARequest("calib", 1, spec["adapter_dir"])
        ok = llm.llm_engine.add_lora(lora_req)
        mark("adapter", hs, added=bool(ok))

    import random

    rng = random.Random(1234)
    vocab = int(spec["vocab_size"])
    prompts = []
    for _ in range(int(spec["num_prompts"])):
        ids = [rng.randrange(1, vocab - 2) for _ in range(int(spec["prompt_tokens"]))]
        prompts.append(TokensPrompt(prompt_token_ids=ids))
    sp = SamplingParams(
        max_tokens=int(spec.get("max_tokens", 1)),
        temperature=0.0,
        ignore_eos=True,
        detokenize=False,
    )
    t0 = time.time()
    outs = llm.generate(prompts, sp, lora_request=lora_req, use_tqdm=False)
    dt = time.time() - t0
    n_prompt = [len(o.prompt_token_ids) for o in outs]
    n_out = [len(o.outputs[0].token_ids) for o in outs]
    mark("request", hs, request_s=dt, prompt_tokens=n_prompt, output_tokens=n_out)
    sys.stdout.flush()
    # Skip interpreter teardown of vLLM (slow, and not part of the measurement).
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
