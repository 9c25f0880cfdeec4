"""/dev/shm as a memory-backed emptyDir: counted at what vLLM's message queues can write there
(the mechanism, from vLLM 0.32.0's source), capped by the emptyDir's sizeLimit; not at the
sizeLimit itself (1 GiB is a common value where vLLM on CPU writes at most 400 MiB)."""

from vllm_sizer.estimator import EngineSettings, ModelGeometry, build_report
from vllm_sizer.estimator import constants as C
from tests.conftest import QWEN3_0_6B

MiB, GiB = 2**20, 2**30


def term(report, name="dev_shm"):
    return next((t.bytes for t in report.terms if t.name == name), 0)


def report(**kw):
    return build_report(ModelGeometry.from_hf_config(dict(QWEN3_0_6B)),
                        EngineSettings(model="Qwen/Qwen3-0.6B", vllm_version="0.32.0", **kw))


def test_cpu_counts_the_executor_and_worker_queues_not_the_size_limit():
    r = report(device="cpu", dev_shm_memory=True, dev_shm_bytes=GiB)
    # rpc_broadcast_mq 16 MiB x 10 + one worker_response_mq 24 MiB x 10
    assert term(r) == 160 * MiB + 240 * MiB
    assert any("message-queue ring buffers" in n for n in r.notes)
    without = report(device="cpu")
    assert r.total_memory_bytes - without.total_memory_bytes == 400 * MiB


def test_the_size_limit_caps_it():
    r = report(device="cpu", dev_shm_memory=True, dev_shm_bytes=256 * MiB)
    assert term(r) == 256 * MiB
    assert "capped by the emptyDir sizeLimit 256 MiB" in next(
        t.source for t in r.terms if t.name == "dev_shm")


def test_no_size_limit_counts_the_mechanism():
    assert term(report(device="cpu", dev_shm_memory=True)) == 400 * MiB


def test_gpu_single_worker_has_no_queue_in_shm_and_tp_adds_workers_and_the_tp_group():
    assert term(report(device="cuda", dev_shm_memory=True, dev_shm_bytes=GiB)) == 0
    tp4 = term(report(device="cuda", tensor_parallel_size=4, dev_shm_memory=True))
    assert tp4 == 160 * MiB + 4 * 240 * MiB + 24 * MiB
    assert tp4 == C.dev_shm_message_queue_bytes("cuda", 4, 1)[0]


def test_not_memory_backed_is_not_counted():
    assert term(report(device="cpu")) == 0
