from vllm_sizer.workloads.shell import find_shell, run_script


def words(script, env=None, **kw):
    return [c.words for c in run_script(script, env or {}, **kw)]


def test_split_on_operators_newlines_and_continuations():
    script = """set -e
echo start; mkdir -p /tmp/x && cd /tmp/x || exit 1
exec vllm serve Qwen/Qwen3-8B \\
    --max-num-seqs 8 \\
    --port 8000 > /tmp/log 2>&1 &
wait"""
    assert words(script) == [
        ["set", "-e"], ["echo", "start"], ["mkdir", "-p", "/tmp/x"], ["cd", "/tmp/x"],
        ["exit", "1"],
        ["exec", "vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "8", "--port", "8000"],
        ["wait"]]


def test_quoting_and_comments():
    script = """# start the server
vllm serve 'a b' "c $X" --lora-modules '{"name": "x", "path": "/p"}' # trailing"""
    assert words(script, {"X": "1"}) == [
        ["vllm", "serve", "a b", "c 1", "--lora-modules", '{"name": "x", "path": "/p"}']]


def test_expansions_and_field_splitting():
    env = {"ARGS": "--max-num-seqs 4  --enforce-eager", "M": "org/m"}
    assert words("vllm serve $M $ARGS", env) == [
        ["vllm", "serve", "org/m", "--max-num-seqs", "4", "--enforce-eager"]]
    assert words('vllm serve "$ARGS"', env) == [["vllm", "serve", "--max-num-seqs 4  --enforce-eager"]]
    assert words("vllm serve '$M'", env) == [["vllm", "serve", "$M"]]
    assert words("vllm serve ${NOPE:-def/m} ${M:+--x} ${M-y}", env) == [
        ["vllm", "serve", "def/m", "--x", "org/m"]]


def test_unknown_variables_stay_literal_and_are_reported():
    cmds = run_script("vllm serve $MODEL --max-num-seqs ${SEQS}", {}, unknown={"SEQS"})
    assert cmds[0].words == ["vllm", "serve", "$MODEL", "--max-num-seqs", "${SEQS}"]
    assert cmds[0].unresolved == ["$MODEL", "${SEQS}"]
    # a default is not used when the variable is set from valueFrom (value unknown)
    cmds = run_script("vllm serve ${M:-x}", {}, unknown={"M"})
    assert cmds[0].words == ["vllm", "serve", "${M:-x}"]


def test_exports_and_prefix_assignments_reach_the_command():
    cmds = run_script("export VLLM_CPU_KVCACHE_SPACE=8\nM=org/m\nA=1 exec vllm serve $M", {})
    assert cmds[-1].words == ["exec", "vllm", "serve", "org/m"]
    assert cmds[-1].env == {"VLLM_CPU_KVCACHE_SPACE": "8", "A": "1"}


def test_positional_parameters():
    cmds = run_script('exec vllm serve "$@"', {}, positional=["bash", "m", "--max-num-seqs", "2"])
    assert cmds[0].words == ["exec", "vllm", "serve", "m", "--max-num-seqs", "2"]
    assert words("echo $1 $#", positional=["sh", "a"]) == [["echo", "a", "1"]]


def test_command_substitution_is_literal_and_reported():
    cmds = run_script("vllm serve m --max-num-seqs $(nproc)", {})
    assert cmds[0].words[-1] == "$(nproc)"
    assert cmds[0].unresolved == ["$(nproc)"]


def test_find_shell():
    assert find_shell(["/bin/sh", "-c", "script"]) == ("script", [])
    assert find_shell(["bash", "-ec", "s", "bash", "a"]) == ("s", ["bash", "a"])
    assert find_shell(["bash", "-o", "pipefail", "-c", "s"]) == ("s", [])
    assert find_shell(["/usr/bin/env", "bash", "-lc", "s"]) == ("s", [])
    assert find_shell(["tini", "--", "sh", "-c", "s"]) == ("s", [])
    assert find_shell(["bash", "start.sh"]) is None
    assert find_shell(["vllm", "serve"]) is None
    assert find_shell(["sh", "-c"]) is None



def test_here_documents_and_written_files():
    script = "\n".join([
        "cat > /c.yaml <<EOF", "a: $X", "EOF",
        "cat <<-'END' >/raw", "\tb: $X", "\tEND",
        "tee -a /c.yaml <<EOF", "c: 1", "EOF",
        "printf 'd: 2\\n' >> /c.yaml",
        "run 2>&1 >&2 >/dev/null",
    ])
    cmds = run_script(script, {"X": "7"})
    assert [c.words for c in cmds] == [["cat"], ["cat"], ["tee", "-a", "/c.yaml"],
                                       ["printf", "d: 2\\n"], ["run"]]
    assert cmds[-1].files == {"/c.yaml": "a: 7\nc: 1\nd: 2\n", "/raw": "b: $X\n"}


def test_a_script_that_ends_in_a_backslash_inside_double_quotes_is_read():
    # the tokenizer once raised here (a lone backslash is no quoted run): an internal error
    assert words('vllm serve "Qwen/Qwen3-0.6B\\') == [["vllm", "serve", "Qwen/Qwen3-0.6B\\"]]


def test_an_assignment_from_an_unknown_expansion_is_unknown_not_its_text():
    # llm-d's DeepSeek-V4 decode LWS: START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL ))
    # then `--data-parallel-start-rank $START_RANK`: the literal text was split into five words
    # ('$((', '${LWS_WORKER_INDEX:-0}', '*', ...) and the flag read '$((' as its value
    script = ("START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP ))\n"
              "export B=x$UNKNOWN\n"
              "exec vllm serve m --data-parallel-start-rank $START_RANK --b $B")
    (cmd,) = run_script(script, {"DP": "4"}, {"UNKNOWN"})
    assert cmd.words == ["exec", "vllm", "serve", "m", "--data-parallel-start-rank",
                         "$START_RANK", "--b", "$B"]
    assert "$START_RANK" in cmd.unresolved and "B" not in cmd.env
    # a known value is still assigned
    (cmd,) = run_script("R=$(( 2 * DP ))\nexec vllm serve m --x $R", {"DP": "4"})
    assert cmd.words[-1] == "8"
