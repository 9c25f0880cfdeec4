"""Peak-memory probes: a fresh memory cgroup (v1 or v2) or a VmHWM fallback.

All parsing is in small pure functions so tests can point them at a fake
cgroup directory.
"""

from __future__ import annotations

import os
import signal
import time

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"


def read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            s = f.read().strip()
    except OSError:
        return None
    if s == "max":
        return None
    try:
        return int(s)
    except ValueError:
        return None


def parse_kv_file(text: str) -> dict[str, int]:
    """memory.stat / memory.oom_control / memory.events: 'key value' lines."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = int(parts[1])
            except ValueError:
                pass
    return out


def read_kv(path: str) -> dict[str, int]:
    try:
        with open(path) as f:
            return parse_kv_file(f.read())
    except OSError:
        return {}


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/<pid>/cgroup -> {controller: path}; the v2 line is under key ''."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, path = parts
        if ctrls == "":
            out[""] = path
        for c in ctrls.split(","):
            if c:
                out[c] = path
    return out


def parse_vm_hwm(status_text: str) -> int | None:
    """VmHWM from /proc/<pid>/status, in bytes."""
    for line in status_text.splitlines():
        if line.startswith("VmHWM:"):
            parts = line.split()
            return int(parts[1]) * 1024  # kB
    return None


def vm_hwm(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return parse_vm_hwm(f.read())
    except OSError:
        return None


def detect_version(v1_root: str = V1_ROOT, v2_root: str = V2_ROOT) -> str:
    """'v1', 'v2' or 'none' (no writable memory cgroup)."""
    if os.path.exists(os.path.join(v1_root, "memory.max_usage_in_bytes")) or os.path.exists(
        os.path.join(v1_root, "memory.limit_in_bytes")
    ):
        return "v1"
    if os.path.exists(os.path.join(v2_root, "cgroup.controllers")):
        with open(os.path.join(v2_root, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                return "v2"
    return "none"


def own_cgroup_dir(
    version: str,
    v1_root: str = V1_ROOT,
    v2_root: str = V2_ROOT,
    proc_cgroup_text: str | None = None,
) -> str:
    """This process's memory cgroup directory (new cgroups are nested under it, so a
    run stays inside whatever cgroup the caller lives in)."""
    if proc_cgroup_text is None:
        with open("/proc/self/cgroup") as f:
            proc_cgroup_text = f.read()
    m = parse_proc_cgroup(proc_cgroup_text)
    if version == "v1":
        rel = m.get("memory", "/")
        root = v1_root
    else:
        rel = m.get("", "/")
        root = v2_root
    d = os.path.join(root, rel.lstrip("/"))
    return d if os.path.isdir(d) else root


class MemCgroup:
    """A memory cgroup made for one run. `path` is created by create()."""

    def __init__(self, path: str, version: str):
        self.path = path
        self.version = version

    # -- files
    def _f(self, name: str) -> str:
        return os.path.join(self.path, name)

    @classmethod
    def create(
        cls,
        name: str,
        limit_bytes: int | None,
        version: str | None = None,
        parent: str | None = None,
    ) -> MemCgroup:
        version = version or detect_version()
        if version == "none":
            raise OSError("no memory cgroup available")
        parent = parent or own_cgroup_dir(version)
        path = os.path.join(parent, name)
        os.makedirs(path, exist_ok=True)
        cg = cls(path, version)
        if limit_bytes:
            if version == "v1":
                cg._write("memory.limit_in_bytes", str(int(limit_bytes)))
                # no swap here; keep memsw equal so a swap-enabled host also caps
                if os.path.exists(cg._f("memory.memsw.limit_in_bytes")):
                    try:
                        cg._write("memory.memsw.limit_in_bytes", str(int(limit_bytes)))
                    except OSError:
                        pass
            else:
                cg._write("memory.max", str(int(limit_bytes)))
                if os.path.exists(cg._f("memory.swap.max")):
                    try:
                        cg._write("memory.swap.max", "0")
                    except OSError:
                        pass
        return cg

    def _write(self, name: str, value: str) -> None:
        with open(self._f(name), "w") as f:
            f.write(value)

    def add_pid(self, pid: int) -> None:
        self._write("cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        try:
            with open(self._f("cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def usage(self) -> int | None:
        return read_int(
            self._f("memory.usage_in_bytes" if self.version == "v1" else "memory.current")
        )

    def peak(self) -> int | None:
        return read_int(
            self._f("memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak")
        )

    def reset_peak(self) -> bool:
        """v1: write 0 to max_usage_in_bytes (resets to current usage). v2 (6.12+):
        any write to memory.peak resets it for this file descriptor only, which does
        not help a reader that reopens, so v2 returns False and phases are derived
        from the running max instead."""
        if self.version == "v1":
            try:
                self._write("memory.max_usage_in_bytes", "0")
                return True
            except OSError:
                return False
        return False

    def limit(self) -> int | None:
        return read_int(self._f("memory.limit_in_bytes" if self.version == "v1" else "memory.max"))

    def stat(self) -> dict[str, int]:
        return read_kv(self._f("memory.stat"))

    def oom_kills(self) -> int:
        if self.version == "v1":
            d = read_kv(self._f("memory.oom_control"))
            n = d.get("oom_kill", 0)
            if n == 0 and "oom_kill" not in d:
                # old kernels: fall back to failcnt at the limit (weaker signal)
                return 0
            return n
        return read_kv(self._f("memory.events")).get("oom_kill", 0)

    def rss_bytes(self, stat: dict[str, int] | None = None) -> int | None:
        s = stat if stat is not None else self.stat()
        if self.version == "v1":
            return s.get("total_rss", s.get("rss"))
        return s.get("anon")

    def kill_all(self, sig: int = signal.SIGKILL, wait_s: float = 10.0) -> None:
        """Kill every process in this cgroup (all were started by the runner)."""
        deadline = time.time() + wait_s
        while True:
            pids = self.pids()
            if not pids:
                return
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            if time.time() > deadline:
                return
            time.sleep(0.2)

    def remove(self) -> None:
        self.kill_all()
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.2)
