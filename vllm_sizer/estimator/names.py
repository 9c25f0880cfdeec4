"""Model names → the catalog geometry they must share, by written rules, said out loud.

`resolve_model(name)` tries, in order (the first rule that gives one geometry wins):

1. exact: the id or an alias, case-insensitive; `hf://`, `huggingface://`, any `scheme://`,
   `https://huggingface.co/`, `@revision` and trailing `/` are ignored. No note.
2. path: a local path or storage URI ending in `org/name` (`/models/Qwen/Qwen3-8B`,
   `s3://bucket/meta-llama/Llama-3.1-8B`), or holding a Hugging Face cache directory
   `models--org--name` (`~/.cache/huggingface/hub/models--Qwen--Qwen3-8B/snapshots/abc`).
3. GGUF is refused: a GGUF file carries its own tensor types and vLLM reads the geometry from
   it, so no catalog entry is right for it (`cannot size`, with the reason).
4. same name, other org (re-uploads and mirrors: `unsloth/Llama-3.2-1B-Instruct`).
5. quantization and format suffixes at the end of the name (`-AWQ`, `-GPTQ-Int4`, `-Int8`,
   `-FP8-dynamic`, `-w8a8`, `-quantized.w4a16`, `-bnb-4bit`, `-NVFP4`, `-MXFP4`): the base
   name's geometry with the suffix's quantization (weight bytes change, shapes never do).
6. variants that share shapes: `-Instruct` / `-it` / `-Chat` / `-hf` / `-Base` / `-pt`
   added or removed, Meta's `Meta-` prefix (`Meta-Llama-3.1-8B-Instruct` was renamed
   `Llama-3.1-8B-Instruct`), and a version written with an underscore between digits, as
   NVIDIA's and OpenBMB's Hub names do (`nvidia/Llama-3_3-Nemotron-Super-49B-v1`, written
   `Llama-3.3-Nemotron-Super-49B-v1` in manifests; `MiniCPM-V-2_6`).
7. lineage: distills and fine-tunes whose base model is published in their model card
   (`DeepSeek-R1-Distill-Llama-8B` → `meta-llama/Llama-3.1-8B`), from LINEAGE below. An
   entry may also state the checkpoint's weight format where it differs from the target's
   (a WeightFormat: the quantization_config its repo publishes, and where that is stated):
   `Kimi-K2-Thinking` has Kimi-K2-Instruct's shapes and ships INT4 experts, not FP8. The
   format belongs to the checkpoint the key names: a name with other variant words (`-Base`
   for an `-Instruct` key) keeps the target's own format, and a quantization suffix on the
   name (another checkpoint) wins over it.
8. contained: a fine-tune whose name contains a catalog model's whole name with its size
   (`Hermes-3-Llama-3.1-8B` → `meta-llama/Llama-3.1-8B`).

DeepSeek-V4 (model_type deepseek_v4) keeps FP8-block linears under every rule and varies in its
experts only (_deepseek_v4_weights): `-NVFP4` NVFP4, `-FP8` and `-Base` FP8, `-MXFP4` or no suffix
the entry's own; another format's suffix is refused.

Where a rule matches several catalog models of different geometry, nothing is guessed: the
result is a refusal naming the candidates. A name that matches nothing resolves to None.
Every rule after 1 produces a note ("geometry of X assumed from the name Y: ...") that the
reader turns into a warning and the report carries into its notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import catalog

# Tokens that name a weight format when they end a model name, and the quantization_config
# vLLM would find in such a repo (method, bits). Bytes per parameter follow from
# geometry.QUANT_BYTES_PER_PARAM; sources: AutoAWQ / AutoGPTQ / llm-compressor naming
# (RedHatAI, neuralmagic, hugging-quants, Qwen, unsloth repos).
_QUANT_TOKENS = {
    "awq",
    "gptq",
    "int4",
    "int8",
    "w4a16",
    "w8a8",
    "w8a16",
    "w4a8",
    "fp8",
    "nvfp4",
    "fp4",
    "mxfp4",
    "bnb",
    "4bit",
    "8bit",
    "quantized.w4a16",
    "quantized.w8a8",
    "quantized.w8a16",
    "awq-int4",
    "gptq-int4",
    "gptq-int8",
}
_QUANT_QUALIFIERS = {"dynamic", "static", "block", "marlin", "kv", "a16", "g128", "hf"}
_VARIANT_TOKENS = {"instruct", "it", "chat", "hf", "base", "pt"}
_SIZE = re.compile(r"^(\d+(\.\d+)?[bm]|\d+x\d+(\.\d+)?b|a\d+(\.\d+)?b)$")


@dataclass(frozen=True)
class WeightFormat:
    """The weight format of the checkpoint a LINEAGE key names, where it is not the target
    entry's: the quantization_config as that checkpoint's config.json publishes it (None: not
    quantized, weights at the config's dtype), and the statement it is taken from."""

    quantization_config: dict[str, Any] | None
    source: str


@dataclass(frozen=True)
class VisionTower:
    """A vision tower the LINEAGE key's checkpoint adds to its (text-only) target: the
    vision_config of the catalog entry `model_id` (the same tower), and the statement."""

    model_id: str
    source: str


# Published lineages (each model card states the base): canonical name → (catalog id, the
# statement), or (catalog id, the statement, the checkpoint's own WeightFormat or the
# VisionTower it adds).
Lineage = tuple[str, str] | tuple[str, str, WeightFormat | VisionTower]
LINEAGE: dict[str, Lineage] = {
    "deepseek-r1-distill-llama-8b": (
        "meta-llama/Llama-3.1-8B",
        "DeepSeek-R1 model card: distilled from Llama-3.1-8B",
    ),
    "deepseek-r1-distill-llama-70b": (
        "meta-llama/Llama-3.3-70B-Instruct",
        "DeepSeek-R1 model card: from Llama-3.3-70B-Instruct",
    ),
    "deepseek-r1-distill-qwen-1.5b": (
        "Qwen/Qwen2.5-Math-1.5B",
        "DeepSeek-R1 model card: from Qwen2.5-Math-1.5B",
    ),
    # Qwen2.5-Math-7B is not in the catalog; it is initialised from Qwen2.5-7B (Qwen2.5-Math
    # technical report, arXiv 2409.12122, as summarised at emergentmind.com/topics/
    # qwen2-5-math-1-5b-model: "Initialization is from the Qwen2.5-1.5B base"), and the
    # catalog's Qwen2.5-Math-1.5B config has exactly Qwen2.5-1.5B's shapes
    # (tests/estimator/test_names.py holds that equal).
    "deepseek-r1-distill-qwen-7b": (
        "Qwen/Qwen2.5-7B",
        "DeepSeek-R1 model card: from Qwen2.5-Math-7B, which the Qwen2.5-Math report initialises "
        "from Qwen2.5-7B (28 layers, 28 Q / 4 KV heads, 152064 vocabulary)",
    ),
    "qwen2.5-math-7b": (
        "Qwen/Qwen2.5-7B",
        "Qwen2.5-Math report: the Qwen2.5-Math base models are initialised from Qwen2.5 of their "
        "size (Qwen2.5-Math-1.5B's config has Qwen2.5-1.5B's shapes)",
    ),
    "deepseek-r1-distill-qwen-14b": (
        "Qwen/Qwen2.5-14B",
        "DeepSeek-R1 model card: from Qwen2.5-14B",
    ),
    "deepseek-r1-distill-qwen-32b": (
        "Qwen/Qwen2.5-32B",
        "DeepSeek-R1 model card: from Qwen2.5-32B",
    ),
    # Qwen2.5-Coder is Qwen2.5 continued on code ("Base on the strong Qwen2.5", each model card,
    # copied at ZHUI/paddlenlp_model_readme Qwen/Qwen2.5-Coder-<size>-Instruct/index.md@10d0a05);
    # the card's parameter count, layers and Q / KV heads equal the Qwen2.5 model's of that size
    # (tests/estimator/test_names.py holds them equal). 0.5B has its own catalog entry.
    "qwen2.5-coder-1.5b": (
        "Qwen/Qwen2.5-1.5B",
        "Qwen2.5-Coder card: built on Qwen2.5; 1.54B, 28 layers, 12 Q / 2 KV heads, tied",
    ),
    "qwen2.5-coder-3b": (
        "Qwen/Qwen2.5-3B",
        "Qwen2.5-Coder card: built on Qwen2.5; 3.09B, 36 layers, 16 Q / 2 KV heads, tied",
    ),
    "qwen2.5-coder-7b": (
        "Qwen/Qwen2.5-7B",
        "Qwen2.5-Coder card: built on Qwen2.5; 7.61B, 28 layers, 28 Q / 4 KV heads",
    ),
    "qwen2.5-coder-14b": (
        "Qwen/Qwen2.5-14B",
        "Qwen2.5-Coder card: built on Qwen2.5; 14.7B, 48 layers, 40 Q / 8 KV heads",
    ),
    "qwen2.5-coder-32b": (
        "Qwen/Qwen2.5-32B",
        "Qwen2.5-Coder card: built on Qwen2.5; 32.5B, 64 layers, 40 Q / 8 KV heads",
    ),
    # Fine-tunes that published vLLM manifests serve (scripts/manifest_model_ids.py counts them),
    # each with the statement of its base. Keys are written as the Hub spells the name; lookup
    # compares canonical tokens (variant words such as -chat / -it dropped, as for rule 6).
    "neural-chat-7b-v3": (
        "mistralai/Mistral-7B-v0.1",
        "Intel, 'Supervised Fine-Tuning and Direct Preference Optimization on Intel Gaudi2' "
        "(medium.com/@NeuralCompressor, 2023-11-14): neural-chat-7b-v3 takes "
        "mistralai/Mistral-7B-v0.1 as its base model",
    ),
    "neural-chat-7b-v3-1": (
        "mistralai/Mistral-7B-v0.1",
        "Intel, 'The Evolution of Intel NeuralChat-7B' (medium.com/intel-analytics-software, "
        "2023-12-19): v3-1 is fine-tuned from mistralai/Mistral-7B-v0.1",
    ),
    "neural-chat-7b-v3-2": (
        "mistralai/Mistral-7B-v0.1",
        "Intel, 'The Evolution of Intel NeuralChat-7B': v3-2 continues v3-1 (fine-tuned from "
        "mistralai/Mistral-7B-v0.1) on MetaMathQA",
    ),
    "neural-chat-7b-v3-3": (
        "mistralai/Mistral-7B-v0.1",
        "Intel, 'The Evolution of Intel NeuralChat-7B': v3-3 differs from v3-2 (v3-1 continued; "
        "v3-1 fine-tuned from mistralai/Mistral-7B-v0.1) only in its merged DPO LoRA modules",
    ),
    "alma-7b": (
        "meta-llama/Llama-2-7b-hf",
        "ALMA paper (Xu et al., arXiv 2309.11674): ALMA fine-tunes LLaMA-2 7B / 13B on "
        "monolingual, then parallel data",
    ),
    "alma-13b": (
        "meta-llama/Llama-2-13b-hf",
        "ALMA paper (Xu et al., arXiv 2309.11674): ALMA fine-tunes LLaMA-2 7B / 13B on "
        "monolingual, then parallel data",
    ),
    "meta-llama-guard-2-8b": (
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Meta Llama Guard 2 model card: an 8B parameter Llama 3-based LLM safeguard model",
    ),
    "llama-guard-3-8b": (
        "meta-llama/Llama-3.1-8B",
        "Llama Guard 3 model card: a Llama-3.1-8B pretrained model, fine-tuned for content "
        "safety classification (copied at ZHUI/paddlenlp_model_readme "
        "meta-llama/Llama-Guard-3-8B/index.md@40a7101)",
    ),
    "llama-3.1-tulu-3-8b": (
        "meta-llama/Llama-3.1-8B",
        "Tulu 3 model card, 'Model Family': the 8B models' base model is meta-llama/Llama-3.1-8B",
    ),
    "llama-3.1-tulu-3.1-8b": (
        "meta-llama/Llama-3.1-8B",
        "Tulu 3.1 model card, 'Model Family': the 8B models' base model is meta-llama/Llama-3.1-8B",
    ),
    "llama-3.1-tulu-3-70b": (
        "meta-llama/Llama-3.1-70B",
        "Tulu 3 model card, 'Model Family': the 70B models' base model is meta-llama/Llama-3.1-70B",
    ),
    "llama-3.1-supernova-lite": (
        "meta-llama/Llama-3.1-8B-Instruct",
        "arcee-ai Llama-3.1-SuperNova-Lite: an 8B model fine-tuned on top of "
        "meta-llama/Llama-3.1-8B-Instruct (as the README of "
        "Joseph717171/Llama-3.1-SuperNova-8B-Lite_TIES_with_Base restates it)",
    ),
    "gemma-1.1-2b-it": (
        "google/gemma-2b-it",
        "Gemma 1.1 model card release notes: Gemma 1.1 2B (IT) is an update over the original "
        "instruction-tuned Gemma release",
    ),
    "gemma-1.1-7b-it": (
        "google/gemma-7b-it",
        "Gemma 1.1 model card release notes: Gemma 1.1 7B (IT) is an update over the original "
        "instruction-tuned Gemma release",
    ),
    "bloom-560m": (
        "bigscience/bloomz-560m",
        "bloom-560m model card (copied at ZHUI/paddlenlp_model_readme "
        "bigscience/bloom-560m/index.md@40a7101): 559,214,592 parameters, 24 layers, 16 heads, "
        "hidden 1024, the count bloomz-560m's config gives; BLOOMZ card: BLOOMZ finetunes the "
        "BLOOM pretrained models on xP3",
    ),
    "dialogpt-medium": (
        "openai-community/gpt2-medium",
        "microsoft/DialoGPT README (@b1d93430fa3b): the DialoGPT 345M model is fine-tuned from "
        "GPT-2, 'in accord with OpenAI GPT-2 model sizes'; its configs/345M/config.json gives "
        "n_embd 1024, n_layer 24, n_head 16, vocab 50257, n_positions 1024 (GPT-2 medium's shapes)",
    ),
    # Mistral Small 3.1 and 3.2 share one architecture (the 3.2 card: 'a minor update of
    # Mistral-Small-3.1-24B-Instruct-2503'); Magistral Small 1.2 is 'building upon Mistral Small
    # 3.2 (2506)' with its vision encoder (Magistral-Small-2509 card): 24B text + Pixtral tower.
    # The key also covers -Base-2503 (variant words are dropped when names are compared).
    "mistral-small-3.1-24b-instruct-2503": (
        "mistralai/Magistral-Small-2509",
        "Magistral-Small-2509 card: built upon Mistral Small 3.2 (2506), vision encoder included; "
        "Mistral-Small-3.2 card: a minor update of Mistral-Small-3.1-24B-Instruct-2503",
    ),
    "mistral-small-3.2-24b-instruct-2506": (
        "mistralai/Magistral-Small-2509",
        "Magistral-Small-2509 card: built upon Mistral Small 3.2 (2506), vision encoder included",
    ),
    "deepseek-v3.1": (
        "deepseek-ai/DeepSeek-V3",
        "DeepSeek-V3.1 model card: post-trained on DeepSeek-V3.1-Base, built upon the original V3 "
        "base checkpoint by long-context extension (both 671B total), FP8 (UE8M0 scales); the "
        "config of its NVFP4 copy (ai-dynamo/aiconfigurator nvidia--DeepSeek-V3.1-NVFP4_config.json) has "
        "DeepSeek-V3's shapes",
    ),
    "deepseek-v3.2-speciale": (
        "deepseek-ai/DeepSeek-V3.2",
        "DeepSeek-V3.2 model card: V3.2-Speciale is the high-compute variant of the V3.2 family "
        "(DeepseekV32ForCausalLM, 685.4B on disk, 642.1GB of safetensors: DeepSeek-V3.2's 642.14Gi "
        "in KAITO's model catalog)",
    ),
    "medgemma-4b-it": (
        "google/gemma-3-4b-it",
        "MedGemma model card: 'a collection of Gemma 3 variants'; MedGemma 4B (4.3B parameters, "
        "SigLIP image encoder) is the Gemma 3 4B multimodal model, the count gemma-3-4b-it gives",
    ),
    # KAITO's model catalog is generated from the Hub (kaito-project/kaito@056b8280b1a8 presets/
    # workspace/models/model_catalog.yaml: architecture, hidden size, layers, Q / KV heads,
    # context and the safetensors' total size). Where a model's row equals a catalog model's in
    # every field, size included, the two share shapes and weight format; the size is checked
    # against the catalog geometry's weight bytes in tests/estimator/test_names.py.
    "deepseek-v3-0324": (
        "deepseek-ai/DeepSeek-V3",
        "KAITO model catalog (generated from the Hub): DeepseekV3ForCausalLM, hidden 7168, 61 "
        "layers, 128 / 128 heads, 163840 tokens, 641.30Gi: the row of DeepSeek-R1-0528 "
        "(DeepSeek-V3's shapes, FP8); an updated checkpoint of DeepSeek-V3",
    ),
    "kimi-k2.6": (
        "moonshotai/Kimi-K2.5",
        "KAITO model catalog (generated from the Hub): KimiK25ForConditionalGeneration, hidden "
        "7168, 61 layers, 64 / 64 heads, 262144 tokens, 554.32Gi: Kimi-K2.5's row",
    ),
    "kimi-k2.7-code": (
        "moonshotai/Kimi-K2.5",
        "KAITO model catalog (generated from the Hub): KimiK25ForConditionalGeneration, hidden "
        "7168, 61 layers, 64 / 64 heads, 262144 tokens, 554.32Gi: Kimi-K2.5's row",
    ),
    "nemotron-cascade-2-30b-a3b": (
        "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        "KAITO model catalog (generated from the Hub): NemotronHForCausalLM, hidden 2688, 52 "
        "layers, 32 / 2 heads, 262144 tokens, 58.82Gi: NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's row",
    ),
    # Checkpoints with a catalog entry's shapes in another weight format (the third element:
    # the quantization_config their repo publishes). Mistral publishes Ministral 3 Instruct in
    # FP8 and, as -BF16 repos, in bf16; the catalog holds bf16 configs of the 3B and 8B.
    "Ministral-3-3B-Instruct-2512": (
        "mistralai/Ministral-3-3B-Instruct-2512-BF16",
        "KAITO model catalog (generated from the Hub): Mistral3ForConditionalGeneration, hidden "
        "3072, 26 layers, 32 / 8 heads, 262144 tokens: the bf16 config's shapes",
        WeightFormat(
            {"quant_method": "fp8"},
            "KAITO model catalog (generated from the Hub): quantMethod fp8, 4.35Gi",
        ),
    ),
    "Ministral-3-8B-Instruct-2512": (
        "mistralai/Ministral-3-8B-Instruct-2512-BF16",
        "KAITO model catalog (generated from the Hub): Mistral3ForConditionalGeneration, hidden "
        "4096, 34 layers, 32 / 8 heads, 262144 tokens: the bf16 config's shapes",
        WeightFormat(
            {"quant_method": "fp8"},
            "KAITO model catalog (generated from the Hub): quantMethod fp8, 9.70Gi",
        ),
    ),
    # Kimi-K2-Thinking: the Kimi K2 shapes (its repo ships configuration_deepseek.py and
    # modeling_deepseek.py, vllm-project/vllm-ascend@182b75e docs/source/tutorials/models/
    # Kimi-K2-Thinking.md; vllm_ascend/quantization/methods/w4a16.py reads its routed experts as
    # DeepseekV3's model.layers.L.mlp.experts.E.*_proj [moe_intermediate_size, hidden]) with
    # INT4 routed experts where Kimi-K2-Instruct ships FP8.
    "Kimi-K2-Thinking": (
        "moonshotai/Kimi-K2-Instruct",
        "ktransformers' Kimi-K2-Thinking guide (kvcache-ai/ktransformers@95009ea doc/en/"
        "Kimi-K2-Thinking.md) serves it with Kimi-K2-Instruct's expert weights "
        "(--kt-weight-path Kimi-K2-Instruct-CPU-weight): Kimi K2's DeepseekV3 shapes",
        WeightFormat(
            {
                "config_groups": {
                    "group_0": {
                        "input_activations": None,
                        "output_activations": None,
                        "targets": ["Linear"],
                        "weights": {
                            "actorder": None,
                            "block_structure": None,
                            "dynamic": False,
                            "group_size": 32,
                            "num_bits": 4,
                            "observer": "minmax",
                            "observer_kwargs": {},
                            "strategy": "group",
                            "symmetric": True,
                            "type": "int",
                        },
                    }
                },
                "format": "pack-quantized",
                "ignore": [
                    "lm_head",
                    "re:.*self_attn.*",
                    "re:.*shared_experts.*",
                    "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                ],
                "kv_cache_scheme": None,
                "quant_method": "compressed-tensors",
                "quantization_status": "compressed",
            },
            "the repo's config.json quantization_config (restated 'based on the config.json from "
            "moonshotai/Kimi-K2-Thinking' at Vadym-Hadetskyi/llm-abliteration@8b98c2d "
            "abliteration/quantize.py; vLLM-Ascend's W4A16 MoE method names it as its "
            "LLM-Compressor int4 checkpoint): int4 group 32 routed experts; attention, shared "
            "experts, the dense MLP and lm_head bf16; ~600GB (ktransformers "
            "Kimi-K2-Thinking-Native.md)",
        ),
    ),
    # LLaVA-NeXT (llava-hf's conversion of liuhaotian/llava-v1.6-mistral-7b): Mistral-7B-Instruct-
    # v0.2's text model, a CLIP ViT-L/14-336 tower and an MLP projector.
    "llava-v1.6-mistral-7b-hf": (
        "mistralai/Mistral-7B-Instruct-v0.2",
        "LLaVA-v1.6-Mistral-7B card: Base LLM mistralai/Mistral-7B-Instruct-v0.2 (copied at "
        "YinanWusoymilk/hf-readme@1ab39f2 training_and_application/readme_files/"
        "liuhaotian_llava-v1.6-mistral-7b.md); transformers' convert_llava_next_weights_to_hf.py "
        "(huggingface/transformers@9426c8c) builds llava-hf's config from that text config, "
        "vocabulary padded 32000 -> 32064 (0.5M parameters not counted)",
        VisionTower(
            "llava-hf/llava-1.5-7b-hf",
            "the same script's vision tower is LlavaNextConfig's default, CLIP ViT-L/14-336 "
            "(hidden 1024, 24 layers, patch 14, image 336), llava-1.5-7b-hf's vision_config; the "
            "projector (MLP-2x, ~21M parameters) is not counted",
        ),
    ),
    # LLaVA-NeXT on Vicuna v1.5 (the same conversion script: text config from the base LLM, the
    # default CLIP ViT-L/14-336 tower). Vicuna v1.5 is a Llama 2 fine-tune.
    "llava-v1.6-vicuna-7b-hf": (
        "lmsys/vicuna-7b-v1.5",
        "LLaVA-v1.6-Vicuna-7B card: Base LLM lmsys/vicuna-7b-v1.5 (ZHUI/paddlenlp_model_readme@"
        "40a7101 liuhaotian/llava-v1.6-vicuna-7b/index.md); transformers' "
        "convert_llava_next_weights_to_hf.py (huggingface/transformers@9426c8c) builds llava-hf's "
        "config from that text config, vocabulary padded 32000 -> 32064 (0.5M parameters not "
        "counted)",
        VisionTower(
            "llava-hf/llava-1.5-7b-hf",
            "LlavaNextConfig's default CLIP ViT-L/14-336, llava-1.5-7b-hf's vision_config; the "
            "projector (MLP-2x, ~21M parameters) is not counted",
        ),
    ),
    "llava-v1.6-vicuna-13b-hf": (
        "meta-llama/Llama-2-13b-hf",
        "LLaVA-v1.6-Vicuna-13B card: Base LLM lmsys/vicuna-13b-v1.5 (ZHUI/paddlenlp_model_readme@"
        "40a7101 liuhaotian/llava-v1.6-vicuna-13b/index.md), and 'Vicuna v1.5 is fine-tuned from "
        "Llama 2' (the Vicuna v1.5 card, bgorlick/getai@6b72009 models/lmsys_vicuna-7b-v1.5/"
        "README.md); transformers' convert_llava_next_weights_to_hf.py (huggingface/"
        "transformers@9426c8c) builds llava-hf's config from that text config, vocabulary padded "
        "32000 -> 32064 (0.7M parameters not counted)",
        VisionTower(
            "llava-hf/llava-1.5-7b-hf",
            "LlavaNextConfig's default CLIP ViT-L/14-336, llava-1.5-7b-hf's vision_config; the "
            "projector (MLP-2x, ~31M parameters) is not counted",
        ),
    ),
    # LLaVA-CoT's checkpoint is a full fine-tune of Llama-3.2-11B-Vision-Instruct (mllama).
    "Llama-3.2V-11B-cot": (
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "LLaVA-CoT README (PKU-YuanGroup/LLaVA-CoT@081cc3f README.md, 'Finetuning'): the released "
        "weights Xkev/Llama-3.2V-11B-cot are reproduced by llama-recipes' finetuning.py "
        "--enable_fsdp --model_name meta-llama/Llama-3.2-11B-Vision-Instruct, and 'you can use "
        "the same code as Llama-3.2-11B-Vision-Instruct to load the model'",
    ),
    "Llama-Guard-3-11B-Vision": (
        "meta-llama/Llama-3.2-11B-Vision-Instruct",
        "Llama Guard 3-11B-vision model card, 'Model Details': 'a Llama-3.2-11B pretrained model, "
        "fine-tuned for content safety classification' (the pretrained and instruct Llama 3.2 "
        "11B Vision models share their mllama shapes)",
    ),
    "Skywork-OR1-7B-Preview": (
        "Qwen/Qwen2.5-7B",
        "Skywork-OR1 (He et al., 2025) as compared in reasoning-RL papers' tables: base model "
        "DeepSeek-R1-Distill-Qwen-7B, which the DeepSeek-R1 card builds from Qwen2.5-Math-7B, "
        "initialised from Qwen2.5-7B (see deepseek-r1-distill-qwen-7b above)",
    ),
    "DeepSeek-R1-Zero": (
        "deepseek-ai/DeepSeek-R1",
        "DeepSeek-R1 model card (copied at ZHUI/paddlenlp_model_readme "
        "deepseek-ai/DeepSeek-R1-Zero/index.md@ffc2695): 'DeepSeek-R1-Zero & DeepSeek-R1 are "
        "trained based on DeepSeek-V3-Base', both 671B total / 37B activated, 128K context",
    ),
    # TinyLlama's chat models are fine-tunes of intermediate checkpoints of one pretraining run
    # (one architecture: 22 layers, hidden 2048, 32 Q / 4 KV heads); v0.3 and v0.4 both use the
    # ChatML template (<|im_start|> / <|im_end|>), the 3 tokens v0.4's vocabulary adds.
    "TinyLlama-1.1B-Chat-v0.3": (
        "TinyLlama/TinyLlama-1.1B-Chat-v0.4",
        "TinyLlama README (jzhang38/TinyLlama, 'Chat models'): TinyLlama-1.1B-Chat-V0.3 is the "
        "chat fine-tune of the run's 480K-step (1T tokens) checkpoint, V0.4 of its 715K-step "
        "(1.5T) checkpoint of the same 1.1B model",
    ),
    "vicuna-13b-v1.5": (
        "meta-llama/Llama-2-13b-hf",
        "Vicuna v1.5 card: 'Vicuna v1.5 is fine-tuned from Llama 2' (bgorlick/getai@6b72009 "
        "models/lmsys_vicuna-7b-v1.5/README.md, the same family card); the 13B is Llama 2 13B",
    ),
    "qwen3.8-27b": (
        "Qwen/Qwen3.5-27B",
        "KAITO model catalog (generated from the Hub): Qwen3_5ForConditionalGeneration, hidden "
        "5120, 64 layers, 24 / 4 heads, 262144 tokens, 51.75Gi: Qwen3.6-27B's row, whose config "
        "(nvidia/Qwen3.6-27B-NVFP4) has Qwen3.5-27B's shapes",
    ),
}


@lru_cache(maxsize=1)
def _lineage_by_canon() -> dict[str, tuple[str, Lineage]]:
    """LINEAGE keyed by canonical tokens (what rule 7 compares), so a key may be written as the
    Hub spells the name (`neural-chat-7b-v3-3`, `gemma-1.1-7b-it`, `Meta-Llama-Guard-2-8B`);
    each with its key as written (a stated format belongs to that key's variant)."""
    return {"-".join(_canonical(_tokens(k))): (k, v) for k, v in LINEAGE.items()}


def lineage_format(entry: Lineage) -> WeightFormat | None:
    """The weight format a LINEAGE entry states for its checkpoint, or None."""
    extra = entry[2] if len(entry) == 3 else None
    return extra if isinstance(extra, WeightFormat) else None


def lineage_tower(entry: Lineage) -> VisionTower | None:
    """The vision tower a LINEAGE entry says its checkpoint adds, or None."""
    extra = entry[2] if len(entry) == 3 else None
    return extra if isinstance(extra, VisionTower) else None


def _with_tower(config: dict[str, Any], tower: VisionTower) -> dict[str, Any]:
    """`config` with the vision_config of the tower's catalog entry (kept for the process)."""
    key = (f"{id(config)}", f"tower:{tower.model_id}")
    got = _DERIVED.get(key)
    if got is None:
        vision = catalog.entry(tower.model_id)["config"]["vision_config"]
        got = _DERIVED[key] = {**config, "vision_config": vision}
    return got


@dataclass(frozen=True)
class ModelResolution:
    """How a model name was resolved. `config` is None when nothing (or no single geometry)
    matched; `refusal` then says why, when there is a reason beyond "not known"."""

    query: str
    model_id: str | None
    config: dict[str, Any] | None
    rule: str  # exact | path | org | quantization | variant | lineage | contained | gguf | ambiguous | none
    note: str | None = None
    refusal: str | None = None
    candidates: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        return self.rule == "exact"


_VERSION_UNDERSCORE = re.compile(r"(?<=\d)_(?=\d)")


def _tokens(name: str) -> list[str]:
    # "3_3" is how some Hub names write the version 3.3 (rule 6): one token either way
    return [t for t in re.split(r"[-_\s]+", _VERSION_UNDERSCORE.sub(".", name.lower())) if t]


def _split_quant(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(base tokens, trailing quantization tokens); quantization only when a real format token
    is in the trailing run (so `-hf` alone is a variant, not a format)."""
    cut = len(tokens)
    while cut > 0 and (tokens[cut - 1] in _QUANT_TOKENS or tokens[cut - 1] in _QUANT_QUALIFIERS):
        cut -= 1
    run = tokens[cut:]
    if not any(t in _QUANT_TOKENS for t in run):
        return tokens, []
    # "…-Instruct-hf-AWQ": keep variant tokens inside the base
    return tokens[:cut], run


def _quant_config(run: list[str]) -> dict[str, Any] | None:
    """The quantization_config a repo with this name suffix carries (method, bits)."""
    joined = "-".join(run)
    if "mxfp4" in run:
        return {"quant_method": "mxfp4"}
    if "nvfp4" in run or "fp4" in run:
        return {"quant_method": "nvfp4", "bits": 4}
    if "bnb" in run:
        return {"quant_method": "bitsandbytes", "bits": 8 if "8bit" in run else 4}
    if "fp8" in run:
        return {"quant_method": "fp8"}
    if "awq" in run or "awq-int4" in run:
        return {"quant_method": "awq", "bits": 4}
    if "gptq" in joined:
        return {"quant_method": "gptq", "bits": 8 if ("int8" in joined or "8bit" in run) else 4}
    if any(t in run for t in ("w4a16", "quantized.w4a16", "int4", "w4a8")):
        return {"quant_method": "compressed-tensors", "bits": 4}
    if any(t in run for t in ("w8a8", "quantized.w8a8", "w8a16", "quantized.w8a16", "int8")):
        return {"quant_method": "compressed-tensors", "bits": 8}
    return None


def _canonical(tokens: list[str]) -> tuple[str, ...]:
    """Name tokens without variant words and without Meta's `meta-` prefix."""
    out = [t for t in tokens if t not in _VARIANT_TOKENS]
    if out[:1] == ["meta"] and len(out) > 1:
        out = out[1:]
    return tuple(out)


@lru_cache(maxsize=1)
def _name_tables() -> tuple[dict[str, list[str]], dict[tuple[str, ...], list[str]]]:
    """name (without org, lowercase) → ids; canonical tokens → ids."""
    by_name: dict[str, list[str]] = {}
    by_canon: dict[tuple[str, ...], list[str]] = {}
    for row in catalog.index_entries():
        for spelling in [row["id"], *row.get("aliases", [])]:
            name = spelling.rsplit("/", 1)[-1].lower()
            by_name.setdefault(name, [])
            if row["id"] not in by_name[name]:
                by_name[name].append(row["id"])
            base, _ = _split_quant(_tokens(name))
            canon = _canonical(base)
            by_canon.setdefault(canon, [])
            if row["id"] not in by_canon[canon]:
                by_canon[canon].append(row["id"])
    return by_name, by_canon


def _signature(model_id: str) -> tuple[Any, ...]:
    # per-layer lists (Hunyuan's moe_intermediate_size) made hashable
    return tuple(
        tuple(v) if isinstance(v, list) else v for v in catalog.index_row(model_id)["signature"]
    )


def _plain(tokens: list[str]) -> set[str]:
    base, _ = _split_quant(tokens)
    return set(base[1:] if base[:1] == ["meta"] else base)


def _one_geometry(
    ids: list[str], org: str | None, query: list[str]
) -> tuple[str | None, tuple[str, ...]]:
    """The id to use when all `ids` share one geometry (same org first, then the closest
    spelling, e.g. the -Instruct entry for an -Instruct name, then unquantized, then
    alphabetical); else (None, the candidates)."""
    if not ids:
        return None, ()
    if len({_signature(i) for i in ids}) > 1:
        return None, tuple(sorted(ids))
    want = _plain(query)

    def rank(i: str) -> tuple[int, int, int, str]:
        quantized = bool(catalog.entry(i)["config"].get("quantization_config"))
        distance = len(_plain(_tokens(i.rsplit("/", 1)[-1])) ^ want)
        return (0 if org and i.lower().startswith(org + "/") else 1, distance, int(quantized), i)

    return sorted(ids, key=rank)[0], ()


_DERIVED: dict[tuple[str, str], dict[str, Any]] = {}  # (id, format) → config, kept for the process


def _with_quant(model_id: str, quant: dict[str, Any] | None) -> dict[str, Any]:
    """The entry's config, with the quantization a name suffix says (the shapes untouched).
    Derived configs live as long as the process (catalog.cached_geometry keys on identity)."""
    config: dict[str, Any] = catalog.entry(model_id)["config"]
    if quant is None:
        return config
    key = (model_id, repr(sorted(quant.items())))
    got = _DERIVED.get(key)
    if got is None:
        got = _DERIVED[key] = {**config, "quantization_config": dict(quant)}
    return got


def _deepseek_v4_weights(
    model_id: str, tokens: list[str], quant: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, str] | None:
    """A DeepSeek-V4 name resolved to a catalog entry by its shapes: every DeepSeek-V4
    checkpoint keeps its linears FP8-block and differs in the experts only (vLLM 0.33.0
    models/deepseek_v4/quant_config.py:63-72: 'DeepSeek V4 checkpoints always use FP8 block
    quantization for linear/attention layers', experts by expert_dtype: fp4 'e.g.
    DeepSeek-V4-Flash', fp8 'e.g. DeepSeek-V4-Flash-Base'), so the config is never taken as
    unquantized. A -Base name or an -FP8 suffix (sgl-project/DeepSeek-V4-Flash-FP8 and -Pro-FP8,
    listed in ai-dynamo/aiconfigurator@095f58a51c4c aic-core/src/aiconfigurator_core/sdk/
    common.py DEEPSEEK_V4_HF_MODELS) gets FP8 experts; an -NVFP4 suffix NVFP4 experts as
    nvidia's re-releases (moe_quant_algo NVFP4), -MXFP4 the official MXFP4 experts; otherwise
    the entry's own format. Another
    format's suffix (AWQ, GPTQ, ...) is refused: vLLM 0.33.0 loads DeepSeek-V4 only through
    DeepseekV4FP8Config. None for other models."""
    config: dict[str, Any] = catalog.entry(model_id)["config"]
    if str(config.get("model_type") or "") != "deepseek_v4":
        return None
    method = str((quant or {}).get("quant_method") or "")
    if method == "nvfp4":
        experts, why = {"expert_dtype": "fp4"}, "NVFP4 experts from the name's suffix"
        q = {**(config.get("quantization_config") or {}), "moe_quant_algo": "NVFP4"}
    elif method == "mxfp4":
        experts, why = {"expert_dtype": "fp4"}, "MXFP4 experts (the name's suffix)"
        q = {
            k: v
            for k, v in (config.get("quantization_config") or {}).items()
            if k != "moe_quant_algo"
        }
    elif method == "fp8" or (quant is None and "base" in tokens):
        experts = {"expert_dtype": "fp8"}
        why = (
            "FP8-block experts from the name's -FP8 suffix"
            if method == "fp8"
            else "FP8-block experts: vLLM's quant_config.py names DeepSeek-V4-Flash-Base an "
            "expert_dtype fp8 checkpoint"
        )
        q = {
            k: v
            for k, v in (config.get("quantization_config") or {}).items()
            if k != "moe_quant_algo"
        }
    elif quant is None:
        return config, "; the entry's weight format: DeepSeek-V4 checkpoints are all FP8-block"
    else:
        return None, (
            f"a {method} DeepSeek-V4 checkpoint is not modelled: vLLM 0.33.0 loads DeepSeek-V4 "
            "with FP8-block linears and MXFP4 / NVFP4 / FP8 experts only "
            "(models/deepseek_v4/quant_config.py)"
        )
    key = (model_id, f"deepseek_v4:{experts['expert_dtype']}:{q.get('moe_quant_algo')}")
    got = _DERIVED.get(key)
    if got is None:
        q = {**q, "quant_method": "fp8", "weight_block_size": [128, 128]}
        got = _DERIVED[key] = {**config, **experts, "quantization_config": q}
    return got, f"; FP8-block linears and {why}"


def _without_quant(model_id: str) -> dict[str, Any]:
    """The entry's config without its quantization_config (kept for the process, like
    _with_quant's)."""
    key = (model_id, "unquantized")
    got = _DERIVED.get(key)
    if got is None:
        config = catalog.entry(model_id)["config"]
        got = _DERIVED[key] = {k: v for k, v in config.items() if k != "quantization_config"}
    return got


def _describe(quant: dict[str, Any] | None) -> str:
    if quant is None:
        return ""
    bits = f" {quant['bits']}-bit" if quant.get("bits") else ""
    return f"; weights as {quant['quant_method']}{bits} from the name's suffix"


def _format_name(quant: dict[str, Any] | None) -> str:
    """'compressed-tensors 4-bit', 'fp8', 'unquantized' for a quantization_config."""
    from .geometry import _read_quantization

    q = _read_quantization(quant)
    if q is None:
        return "unquantized"
    return q.method + (f" {q.bits}-bit" if q.bits else "")


def _lineage_weights(
    target: str, key: str, fmt: WeightFormat | None, query: list[str], quant: dict[str, Any] | None
) -> tuple[dict[str, Any], str]:
    """(config, note tail) of a lineage hit: the name's quantization suffix if it has one, else
    the format the entry states for its checkpoint when the name is that checkpoint's variant,
    else the target's own format."""
    if quant is not None or fmt is None:
        return _with_quant(target, quant), _describe(quant)
    variants = {t for t in _tokens(key) if t in _VARIANT_TOKENS}
    if variants != {t for t in query if t in _VARIANT_TOKENS}:
        return catalog.entry(target)["config"], (
            f"; weights in {target}'s own format: the stated "
            f"{_format_name(fmt.quantization_config)} is {key}'s checkpoint's"
        )
    tail = f"; weights as {_format_name(fmt.quantization_config)}: {fmt.source}"
    if fmt.quantization_config is None:
        return _without_quant(target), tail
    return _with_quant(target, fmt.quantization_config), tail


def resolve_model(name: str) -> ModelResolution:
    """Resolve a model name (see the module docstring for the rules). Never raises."""
    if not isinstance(name, str) or not name.strip() or len(name) > 1000:
        return ModelResolution(str(name)[:200], None, None, "none")
    return _resolve(name.strip())


@lru_cache(maxsize=4096)
def _resolve(name: str) -> ModelResolution:
    key = catalog.normalise_model_id(name)
    found = catalog.exact_id(key)
    if found is not None:
        return ModelResolution(name, found, catalog.entry(found)["config"], "exact")
    parts = [p for p in key.split("/") if p]
    if not parts:
        return ModelResolution(name, None, None, "none")
    cached = _hub_cache_id(parts)
    if cached is not None:
        found = catalog.exact_id(cached)
        if found is not None:
            return _path_hit(name, found, "a Hugging Face cache directory models--ORG--NAME")
        parts = cached.split("/")  # the other rules work on the id it names
    if len(parts) > 2:
        found = catalog.exact_id("/".join(parts[-2:]))
        if found is not None:
            return _path_hit(name, found, "its last two path parts")
    if "gguf" in key:
        return ModelResolution(
            name,
            None,
            None,
            "gguf",
            refusal=(
                "GGUF checkpoints carry their own tensor types and vLLM reads the geometry from the "
                "file: vllm-sizer cannot take it from a catalog model; supply the base model's "
                "config.json with the quantization"
            ),
        )
    leaf = parts[-1]
    org = parts[-2] if len(parts) == 2 else None
    by_name, by_canon = _name_tables()
    tokens = _tokens(leaf)

    def done(
        ids: list[str], rule: str, why: str, quant: dict[str, Any] | None = None
    ) -> ModelResolution | None:
        chosen, ambiguous = _one_geometry(ids, org, tokens)
        if chosen is None and ambiguous:
            return ModelResolution(
                name,
                None,
                None,
                "ambiguous",
                candidates=ambiguous,
                refusal=(
                    f"the name {name!r} matches catalog models of different shapes "
                    f"({', '.join(ambiguous[:5])}) by {why}: not guessed"
                ),
            )
        if chosen is None:
            return None
        v4 = _deepseek_v4_weights(chosen, tokens, quant)
        if v4 is not None:
            v4_config, tail = v4
            if v4_config is None:
                return ModelResolution(name, None, None, "none", refusal=f"{name!r}: {tail}")
            note = f"geometry of {chosen} assumed from the name {name!r} ({why}{tail})"
            return ModelResolution(name, chosen, v4_config, rule, note=note)
        config = _with_quant(chosen, quant)
        unquantized = ""
        if quant is None and not _split_quant(tokens)[1] and config.get("quantization_config"):
            # the name has no quantization suffix, the only entry of its shapes is a quantized
            # repo: the shapes are shared, the weight format is not (bf16 / the config's dtype)
            config = _without_quant(chosen)
            unquantized = "; unquantized weights: the name has no quantization suffix"
        note = (
            f"geometry of {chosen} assumed from the name {name!r} "
            f"({why}{_describe(quant)}{unquantized})"
        )
        return ModelResolution(name, chosen, config, rule, note=note)

    # 4. the same name under another org (or a path / URI whose last part is the name)
    is_path = len(parts) > 2 or name.startswith(("/", ".")) or "://" in name
    if leaf in by_name:
        got = done(
            by_name[leaf],
            "org",
            "the path's last part is this model's name"
            if is_path
            else "same model name" + (", another organisation" if org else ""),
        )
        if got is not None:
            return got
    base, run = _split_quant(tokens)
    quant = _quant_config(run) if run else None
    # 5. a quantization suffix on a known name
    if run and "-".join(base) in by_name:
        got = done(
            by_name["-".join(base)], "quantization", f"quantization suffix -{'-'.join(run)}", quant
        )
        if got is not None:
            return got
    # 6. variants (instruct / base / chat / -hf, Meta- prefix), with or without the suffix
    canon = _canonical(base)
    if canon and canon in by_canon:
        ids = by_canon[canon]
        # the Meta- rename, only where one side carries Meta's prefix
        renamed = any(
            _plain(_tokens(i.rsplit("/", 1)[-1])) == _plain(base)
            and "meta" in (base[:1] + _tokens(i.rsplit("/", 1)[-1])[:1])
            for i in ids
        )
        why = (
            "Meta's Meta- prefix: Meta-Llama-3.1-* repos were renamed Llama-3.1-*"
            if renamed
            else "instruct, base and chat variants share their shapes"
        )
        if any(bool(_VERSION_UNDERSCORE.search(n)) for n in [leaf, *ids]):
            why += "; a version's dot written as an underscore (3_3 for 3.3) in one of the names"
        got = done(
            ids, "variant", why + (f"; quantization suffix -{'-'.join(run)}" if run else ""), quant
        )
        if got is not None:
            return got
    # 7. published lineage
    hit = _lineage_by_canon().get("-".join(canon))
    if hit is not None and catalog.exact_id(hit[1][0]):
        key, lineage = hit
        target = catalog.exact_id(lineage[0])
        assert target is not None
        config, tail = _lineage_weights(target, key, lineage_format(lineage), base, quant)
        tower = lineage_tower(lineage)
        if tower is not None and catalog.exact_id(tower.model_id):
            config = _with_tower(config, tower)
            tail += f"; with {tower.model_id}'s vision tower: {tower.source}"
        return ModelResolution(
            name,
            target,
            config,
            "lineage",
            note=f"geometry of {target} assumed for {name!r} ({lineage[1]}{tail})",
        )
    # 8. the name contains a whole catalog name with its size
    best: list[str] = []
    best_len = 0
    for cand, ids in by_canon.items():
        if len(cand) < 2 or len(cand) < best_len or not any(_SIZE.match(t) for t in cand):
            continue
        if _contains(canon, cand):
            if len(cand) > best_len:
                best, best_len = list(ids), len(cand)
            else:
                best.extend(i for i in ids if i not in best)
    if best:
        got = done(
            best,
            "contained",
            "its name contains this model's name and size; a "
            "fine-tune keeps its base's shapes"
            + (f"; quantization suffix -{'-'.join(run)}" if run else ""),
            quant,
        )
        if got is not None:
            return got
    return ModelResolution(name, None, None, "none")


def _path_hit(name: str, found: str, why: str) -> ModelResolution:
    return ModelResolution(
        name,
        found,
        catalog.entry(found)["config"],
        "path",
        note=f"model path {name!r} read as {found} ({why})",
    )


def _hub_cache_id(parts: list[str]) -> str | None:
    """org/name of a Hugging Face cache directory in a path: huggingface_hub stores a repo
    under `models--{org}--{name}` (huggingface_hub/file_download.py repo_folder_name), and
    platforms mount that layout (`/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/
    snapshots/<rev>`, llmaz's `/workspace/models/models--facebook--opt-125m`)."""
    for part in parts:
        if part.startswith("models--"):
            pieces = part[len("models--") :].split("--")
            if len(pieces) >= 2 and all(pieces):
                return pieces[0] + "/" + "--".join(pieces[1:])
    return None


def hub_cache_id(path: str) -> str | None:
    """org/name when a model path is (inside) a Hugging Face cache directory
    models--ORG--NAME, else None."""
    if not isinstance(path, str) or len(path) > 1000:
        return None
    return _hub_cache_id([p for p in path.split("/") if p])


def _contains(hay: tuple[str, ...], needle: tuple[str, ...]) -> bool:
    n = len(needle)
    return n < len(hay) and any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))


__all__ = [
    "LINEAGE",
    "Lineage",
    "ModelResolution",
    "VisionTower",
    "WeightFormat",
    "hub_cache_id",
    "lineage_format",
    "lineage_tower",
    "resolve_model",
]
