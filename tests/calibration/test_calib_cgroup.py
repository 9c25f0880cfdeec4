"""cgroup parsing and peak reading against a fake cgroup directory."""
import os


from calibration import cgroup as cg


def _w(d, name, text):
    with open(os.path.join(d, name), "w") as f:
        f.write(text)


def test_parse_proc_cgroup_v1_and_v2():
    text = ("9:name=systemd:/\n4:memory:/process_api/abc\n3:cpu,cpuacct:/x\n0::/user.slice\n")
    m = cg.parse_proc_cgroup(text)
    assert m["memory"] == "/process_api/abc"
    assert m["cpu"] == "/x" and m["cpuacct"] == "/x"
    assert m[""] == "/user.slice"


def test_own_cgroup_dir_nests_under_current(tmp_path):
    root = tmp_path / "memory"
    (root / "process_api" / "abc").mkdir(parents=True)
    d = cg.own_cgroup_dir("v1", v1_root=str(root),
                          proc_cgroup_text="4:memory:/process_api/abc\n")
    assert d == str(root / "process_api" / "abc")
    # a path that does not exist in this mount namespace falls back to the root
    d = cg.own_cgroup_dir("v1", v1_root=str(root), proc_cgroup_text="4:memory:/gone\n")
    assert d == str(root)


def test_detect_version(tmp_path):
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "memory.max_usage_in_bytes").write_text("0\n")
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("cpu io memory pids\n")
    assert cg.detect_version(str(v1), str(v2)) == "v1"
    assert cg.detect_version(str(tmp_path / "none"), str(v2)) == "v2"
    assert cg.detect_version(str(tmp_path / "none"), str(tmp_path / "none")) == "none"


def test_v1_peak_usage_oom_and_reset(tmp_path):
    parent = tmp_path / "parent"
    parent.mkdir()
    g = cg.MemCgroup.create("vllm-calib-x", 20 << 30, version="v1", parent=str(parent))
    d = g.path
    assert open(os.path.join(d, "memory.limit_in_bytes")).read() == str(20 << 30)
    _w(d, "memory.max_usage_in_bytes", "123456789\n")
    _w(d, "memory.usage_in_bytes", "1000\n")
    _w(d, "memory.stat", "cache 5\nrss 7\ntotal_cache 50\ntotal_rss 70\n")
    _w(d, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    _w(d, "cgroup.procs", "")
    assert g.peak() == 123456789
    assert g.usage() == 1000
    assert g.rss_bytes() == 70
    assert g.oom_kills() == 2
    assert g.reset_peak() is True
    assert open(os.path.join(d, "memory.max_usage_in_bytes")).read() == "0"
    assert g.limit() == 20 << 30


def test_v2_peak_and_events(tmp_path):
    parent = tmp_path / "p"
    parent.mkdir()
    g = cg.MemCgroup.create("c", 1 << 30, version="v2", parent=str(parent))
    _w(g.path, "memory.peak", "4242\n")
    _w(g.path, "memory.current", "42\n")
    _w(g.path, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    _w(g.path, "memory.stat", "anon 99\nfile 5\n")
    assert open(os.path.join(g.path, "memory.max")).read() == str(1 << 30)
    assert g.peak() == 4242 and g.usage() == 42
    assert g.oom_kills() == 1
    assert g.rss_bytes() == 99
    assert g.reset_peak() is False


def test_read_int_handles_max_and_missing(tmp_path):
    p = tmp_path / "f"
    p.write_text("max\n")
    assert cg.read_int(str(p)) is None
    assert cg.read_int(str(tmp_path / "missing")) is None


def test_parse_vm_hwm():
    status = "Name:\tpython\nVmPeak:\t  100 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1 kB\n"
    assert cg.parse_vm_hwm(status) == 2048 * 1024
    assert cg.parse_vm_hwm("Name: x\n") is None
    assert cg.vm_hwm(os.getpid()) > 0


def test_remove_empty_group(tmp_path):
    # A real cgroup dir can be rmdir'ed while its control files exist; a fake one
    # cannot, so remove() must give up quietly (bounded retries).
    g = cg.MemCgroup(str(tmp_path), "v1")
    (tmp_path / "cgroup.procs").write_text("")
    g.kill_all(wait_s=0)
