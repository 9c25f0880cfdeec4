"""One node of a multi-node engine (Ray executor over several pods, issue 15): the leader pod
holds the API server, engine core, Ray head and its own GPUs' ranks; a worker pod only Ray's
node processes and its GPUs' ranks, with the per-rank terms (worker base, offload, pinned)."""

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report
from vllm_sizer.estimator import constants as C
from vllm_sizer.estimator.host_processes import node_ranks
from tests.conftest import QWEN3_0_6B

GiB = 2**30


def term(report, name):
    return next((t.bytes for t in report.terms if t.name == name), 0)


def report(**kw):
    base = dict(model="Qwen/Qwen3-0.6B", vllm_version="0.19.0", device="cuda",
                tensor_parallel_size=8, pipeline_parallel_size=2)
    base.update(kw)
    return build_report(ModelGeometry.from_hf_config(dict(QWEN3_0_6B)), EngineSettings(**base))


def test_one_node_counts_every_rank_as_before():
    r = report()
    assert term(r, "gpu_worker_processes") == 16 * C.GPU_WORKER_PROCESS_BYTES.value
    assert term(r, "ray_node_processes") == 0
    assert term(r, "runtime_overhead") > 0


def test_leader_counts_only_its_own_gpus_ranks_and_the_ray_head():
    one = report()
    r = report(node_role="leader", nodes=2, local_ranks=8)
    assert term(r, "gpu_worker_processes") == 8 * C.GPU_WORKER_PROCESS_BYTES.value
    assert term(r, "runtime_overhead") == term(one, "runtime_overhead")
    assert term(r, "ray_node_processes") == (
        C.RAY_NODE_PROCESSES_BYTES.value + C.RAY_HEAD_EXTRA_BYTES.value)
    # 8 fewer worker processes, plus the Ray head
    assert one.total_memory_bytes - r.total_memory_bytes == (
        8 * C.GPU_WORKER_PROCESS_BYTES.value - term(r, "ray_node_processes"))
    assert any("multi-node leader" in n for n in r.notes)
    assert any("assumed" in n and "GCS" in n for n in r.notes)


def test_worker_has_no_api_server_or_engine_core_only_ray_and_its_ranks():
    r = report(node_role="worker", nodes=2, local_ranks=8)
    assert term(r, "runtime_overhead") == 0
    assert term(r, "mm_processor_cache") == 0
    assert term(r, "ray_node_processes") == C.RAY_NODE_PROCESSES_BYTES.value
    assert term(r, "gpu_worker_processes") == 8 * C.GPU_WORKER_PROCESS_BYTES.value
    src = next(t.source for t in r.terms if t.name == "ray_node_processes")
    assert "53829" in src and "8 of the engine's 16" in src
    assert any("multi-node worker" in n for n in r.notes)
    assert r.total_memory_bytes < report(node_role="leader", nodes=2, local_ranks=8).total_memory_bytes


def test_per_rank_terms_follow_the_nodes_ranks():
    full = report(cpu_offload_gb=4, lmcache_local_cpu_gb=2.0, kv_connector="LMCacheConnectorV1")
    w = report(node_role="worker", nodes=2, local_ranks=8, cpu_offload_gb=4,
               lmcache_local_cpu_gb=2.0, kv_connector="LMCacheConnectorV1")
    assert term(w, "cpu_offload") * 2 == term(full, "cpu_offload")
    assert term(w, "lmcache_cpu_buffer") == 8 * 2 * GiB
    assert term(full, "lmcache_cpu_buffer") == 16 * 2 * GiB


def test_ranks_default_to_an_even_share_over_the_nodes():
    r = report(node_role="worker", nodes=4)
    assert term(r, "gpu_worker_processes") == 4 * C.GPU_WORKER_PROCESS_BYTES.value
    assert node_ranks(16, nodes=None, local_ranks=None)[0] == 16
    assert node_ranks(16, nodes=3, local_ranks=None)[0] == 6
    assert node_ranks(16, nodes=2, local_ranks=32)[0] == 16  # never more than the engine's


def test_constants_have_their_kind():
    assert C.RAY_NODE_PROCESSES_BYTES.kind == "measured"
    assert C.RAY_HEAD_EXTRA_BYTES.kind == "assumed"


def test_dev_shm_has_no_multiproc_queues_under_ray_only_this_nodes_tp_groups():
    one = report(dev_shm_memory=True)
    r = report(node_role="worker", nodes=2, local_ranks=8, dev_shm_memory=True)
    assert term(r, "dev_shm") == C.MQ_TP_GROUP_BYTES.value  # one TP group of 8 on this node
    assert term(one, "dev_shm") > term(r, "dev_shm")
