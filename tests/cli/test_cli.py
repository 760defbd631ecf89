"""Every CLI verb and flag, run as a real command in a subprocess."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GELU = f"{ROOT}/bench/models/gelu.py:gelu"
BLOCK = f"{ROOT}/bench/models/gpt2_block.py:block"
BLOCK_ARGS = ["--arg", "x=f32[8,32]", "--arg", "n_head=4"] + [
    arg for name, shape in [("ln_1.g", "32"), ("ln_1.b", "32"), ("ln_2.g", "32"),
                            ("ln_2.b", "32"), ("attn.c_attn.w", "32,96"), ("attn.c_attn.b", "96"),
                            ("attn.c_proj.w", "32,32"), ("attn.c_proj.b", "32"),
                            ("mlp.c_fc.w", "32,128"), ("mlp.c_fc.b", "128"),
                            ("mlp.c_proj.w", "128,32"), ("mlp.c_proj.b", "32")]
    for arg in ("--arg", f"p.{name}=f32[{shape}]")]


def fusejit(*args, cache_dir=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache_dir is not None:
        env["FUSEJIT_CACHE_DIR"] = str(cache_dir)
    # ``bench --suite --quick`` takes about 210 s alone on this project's 2-core machine (the
    # same before and after 5b07f83); 300 s ran out with a second test suite beside it
    return subprocess.run([sys.executable, "-m", "fusejit", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=900)


def test_version():
    result = fusejit("--version")
    assert result.returncode == 0 and result.stdout.startswith("fusejit ")


def test_dump_traced_ir_keeps_argument_names_and_source_lines():
    result = fusejit("dump", GELU, "--arg", "x=f32[8,32]", "--stage", "traced")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def gelu(x: f32[8,32]) -> f64[8,32]:")  # NumPy promotes
    assert "tanh" in result.stdout and "# gelu.py:" in result.stdout


def test_dump_kernels_with_why_on_the_gpt2_block():
    result = fusejit("dump", BLOCK, *BLOCK_ARGS, "--stage", "kernels", "--why")
    assert result.returncode == 0, result.stderr
    assert "# kernel k" in result.stdout
    assert "refused fusions:" in result.stdout
    assert "gpt2_block.py:" in result.stdout


def test_dump_print_after_and_pass_stage():
    result = fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--print-after", "fold",
                     "--stage", "cse")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("def gelu(") == 2


def test_dump_source_shows_numba_kernels():
    result = fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--stage", "source")
    assert result.returncode == 0, result.stderr
    assert "njit" in result.stdout


def test_dump_json_and_dot(tmp_path):
    result = fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert any(node.get("op") == "fused" for node in json.loads(result.stdout)["nodes"])
    dot_file = tmp_path / "gelu.dot"
    result = fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--format", "dot",
                     "--output", str(dot_file))
    assert result.returncode == 0, result.stderr
    assert dot_file.read_text().startswith('digraph "gelu"')


def test_png_output_renders_with_graphviz_or_says_how_to_install_it(tmp_path):
    image = tmp_path / "g.png"
    result = fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--format", "dot",
                     "--output", str(image))
    if shutil.which("dot") is None:
        assert result.returncode == 2
        assert "install" in result.stderr and "Traceback" not in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert image.read_bytes().startswith(b"\x89PNG")


def test_bad_argument_spec_is_one_line_with_exit_code_2():
    result = fusejit("dump", GELU, "--arg", "x=q7[4]")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "unknown dtype 'q7' (use one of bool i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64 c64 " \
           "c128)" in result.stderr


def test_missing_file_is_a_usage_error():
    result = fusejit("dump", "nope.py:f")
    assert result.returncode == 2 and "no such file" in result.stderr


def test_error_in_user_model_is_one_line_unless_debug():
    wrong = ("dump", BLOCK, "--arg", "x=f32[8,16]", *BLOCK_ARGS[2:])   # a shape mismatch
    result = fusejit(*wrong)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "--debug" in result.stderr
    result = fusejit("--debug", *wrong)
    assert result.returncode == 1 and "Traceback" in result.stderr
    result = fusejit(*wrong, "--debug")   # where the hint's reader puts it
    assert result.returncode == 1 and "Traceback" in result.stderr


def test_a_model_file_imports_the_modules_beside_it(tmp_path):
    (tmp_path / "helpers_beside.py").write_text("def twice(a):\n    return a * 2\n")
    model = tmp_path / "uses_helpers.py"
    model.write_text("from helpers_beside import twice\n\n\ndef g(a):\n    return twice(a) + 1\n")
    result = fusejit("dump", f"{model}:g", "--arg", "a=f32[4]", "--stage", "traced")
    assert result.returncode == 0, result.stderr
    assert "helpers_beside.py:2" in result.stdout


def test_bench_of_a_decorated_function_times_its_eager_function(tmp_path, monkeypatch):
    from fusejit import CompiledFunction, benchtools, cli
    model = tmp_path / "decorated.py"
    model.write_text("import fusejit\n\n\n@fusejit.compile\ndef g(a):\n    return a * 2 + 1\n")
    seen = {}

    def timed(compiled, eager, *rest):
        seen["eager"] = eager
        return {}
    monkeypatch.setattr(benchtools, "bench_function", timed)
    monkeypatch.setattr(benchtools, "compile_latency", lambda *args: {})
    assert cli.main(["bench", f"{model}:g", "--arg", "a=f32[4]", "--json"]) == 0
    assert not isinstance(seen["eager"], CompiledFunction)


def test_dump_lists_arguments_in_the_functions_order(tmp_path):
    model = tmp_path / "scaled.py"
    model.write_text("def scaled(x, g, eps=1e-5):\n    return x * g + eps\n")
    result = fusejit("dump", f"{model}:scaled", "--arg", "g=f32[8]", "--arg", "x=f32[4,8]",
                     "--stage", "traced")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("def scaled(x: f32[4,8], g: f32[8]) -> f32[4,8]:")


@pytest.mark.parametrize("args, message", [
    (["--arg", "=f32[4]"], "--arg expects NAME=VALUE"),
    (["--arg", "x=f32[4]", "--print-after", "bogus"], "unknown stage 'bogus'"),
], ids=["empty_name", "print_after"])
def test_usage_mistakes_exit_with_code_2(args, message):
    result = fusejit("dump", GELU, *args)
    assert result.returncode == 2 and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_directory_is_not_a_model_file(tmp_path):
    result = fusejit("dump", f"{tmp_path}:f")
    assert result.returncode == 2 and "not a file" in result.stderr


@pytest.mark.parametrize("command", ["dump", "bench"])
def test_error_in_user_model_names_its_source_line(command):
    result = fusejit(command, BLOCK, "--arg", "x=f32[8,16]", *BLOCK_ARGS[2:])
    assert result.returncode == 1
    assert "ValueError" in result.stderr and "raised at " in result.stderr
    assert "gpt2_block.py:" in result.stderr


def test_cache_info_and_clear_touch_fusejits_own_files_only(tmp_path):
    cache = tmp_path / "cache"
    (cache / "data").mkdir(parents=True)
    (cache / "data" / "weights.py").write_text("W = 1\n")   # the user's, in the same directory
    assert fusejit("dump", GELU, "--arg", "x=f32[4,4]", "--stage", "source",
                   cache_dir=cache).returncode == 0
    info = fusejit("cache", "info", cache_dir=cache)
    assert info.returncode == 0 and "kernel sources: 1" in info.stdout
    assert fusejit("cache", "clear", cache_dir=cache).returncode == 0
    assert sorted(p.name for p in cache.rglob("*")) == ["data", "weights.py"]


def test_cache_clear_that_cannot_remove_a_file_fails(tmp_path, monkeypatch, capsys):
    from fusejit import cli
    own = tmp_path / "fj0.0+abc-nb0.68"
    own.mkdir()
    (own / "kernel.py").write_text("")

    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setenv("FUSEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "unlink", refuse)
    assert cli.main(["cache", "clear"]) == 1
    assert "could not clear" in capsys.readouterr().err and (own / "kernel.py").exists()


def test_cache_info_names_a_folder_it_could_not_read(tmp_path, monkeypatch, capsys):
    from fusejit import cli
    own = tmp_path / "fj0.0+abc-nb0.68"
    (own / "kernels").mkdir(parents=True)
    (own / "kernels" / "k.py").write_text("x = 1\n")
    (own / "programs").mkdir()
    scandir = os.scandir

    def refuse_programs(path):
        if Path(path).name == "programs":
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setenv("FUSEJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(os, "scandir", refuse_programs)
    assert cli.main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "kernel sources: 1\nfiles: 1\n" in out
    assert f"unreadable: 1 (not counted above; first: {own / 'programs'})" in out


def test_cache_commands_refuse_a_cache_directory_that_is_a_file(tmp_path):
    plain = tmp_path / "not-a-dir"
    plain.write_text("x")
    for action in ("info", "clear"):
        result = fusejit("cache", action, cache_dir=plain)
        assert result.returncode == 1 and "is not a directory" in result.stderr
        assert result.stdout == "" and plain.read_text() == "x"
    missing = fusejit("cache", "clear", cache_dir=tmp_path / "missing")
    assert missing.returncode == 0 and "nothing to clear" in missing.stdout


def test_bench_one_function_as_json():
    result = fusejit("bench", GELU, "--arg", "x=f32[64,64]", "--repeat", "3", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kernels"] == 1 and report["speedup"] > 0
    assert report["warm_to_first_replay_s"] > 0 and report["cold_first_result_s"] > 0


def test_demo_small():
    result = fusejit("demo", "--size", "small", "--repeat", "2")
    assert result.returncode == 0, result.stderr
    assert "fused kernels" in result.stdout and "speedup" in result.stdout


def test_dump_cuda_source_and_ptx_without_a_gpu():
    softmax = f"{ROOT}/bench/models/softmax.py:softmax"
    result = fusejit("dump", softmax, "--arg", "x=f32[8,32]", "--target", "cuda",
                     "--stage", "source")
    assert result.returncode == 0, result.stderr
    assert "target=cuda" in result.stdout and "cuda.jit" in result.stdout
    result = fusejit("dump", softmax, "--arg", "x=f32[8,32]", "--target", "cuda",
                     "--stage", "ptx")
    assert result.returncode == 0, result.stderr
    assert ".target sm_90" in result.stdout and "0 bytes spill stores" in result.stdout


def test_log_topics_go_to_stderr_through_logging():
    env_log = dict(os.environ, PYTHONPATH=str(ROOT), FUSEJIT_LOG="trace,fusion")
    result = subprocess.run([sys.executable, "-m", "fusejit", "dump", GELU, "--arg",
                             "x=f32[4,4]"], capture_output=True, text=True, env=env_log,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "fusejit.trace: gelu: traced" in result.stderr


def test_dump_memory_stage_lists_buffers_and_the_arena():
    result = fusejit("dump", f"{ROOT}/bench/models/gpt2_block.py:block", "--stage", "memory")
    assert result.returncode == 0, result.stderr
    assert "eager NumPy peak estimate" in result.stdout and "arena:" in result.stdout


def test_bench_suite_quick_writes_table_and_json(tmp_path):
    result = fusejit("bench", "--suite", "--quick")
    assert result.returncode == 0, result.stderr
    assert "gpt2_block" in result.stdout and "speedup" in result.stdout
    assert "results:" in result.stdout and "MISMATCH" not in result.stdout


@pytest.mark.parametrize("argv, message", [
    ((), "a command is required"),
    (("demo", "--repeat", "0"), "must be at least 1"),
    (("dump", GELU, "--arg", "y=f32[8]"), "has no parameter named 'y'"),
], ids=["no_command", "repeat_zero", "unknown_argument"])
def test_usage_errors_exit_2_with_one_line_on_stderr(argv, message):
    result = fusejit(*argv)
    assert result.returncode == 2 and message in result.stderr and not result.stdout


USER_MODEL = '''
import numpy as np

print("importing the model")


def example_args():
    print("making the arguments")
    return (np.ones((4, 8), np.float32),)


def chatty(x):
    print("debug:", x.shape)
    return np.tanh(x) * 2


def boom(x):
    raise RuntimeError("the model broke")
'''


@pytest.fixture
def user_model(tmp_path):
    path = tmp_path / "user_model.py"
    path.write_text(USER_MODEL)
    return path


def test_the_users_prints_go_to_stderr_and_json_stays_json(user_model, tmp_path):
    for arguments in (["--arg", "x=f32[4,8]"], []):   # [] : example_args() prints too
        result = fusejit("dump", f"{user_model}:chatty", *arguments, "--format", "json",
                         cache_dir=tmp_path / "cache")
        assert result.returncode == 0, result.stderr
        json.loads(result.stdout)
        assert "debug: (4, 8)" in result.stderr and "importing the model" in result.stderr


@pytest.mark.parametrize("flags", [["--stage", "source"], ["--why"],
                                   ["--print-after", "fold"]])
def test_a_machine_format_refuses_text_only_flags(user_model, flags):
    # They were ignored: the graph came out instead of what was asked for.
    result = fusejit("dump", f"{user_model}:chatty", "--arg", "x=f32[4,8]", "--format", "dot",
                     *flags)
    assert result.returncode == 2 and "is text only" in result.stderr, result.stderr


def test_command_line_mistakes_are_one_line_errors(user_model, tmp_path):
    other = tmp_path / "notes.txt"
    other.write_text("def f(x):\n    return x\n")
    result = fusejit("dump", f"{other}:f", "--arg", "x=f32[4]")
    assert result.returncode == 2 and "not a Python file" in result.stderr, result.stderr
    result = fusejit("dump", f"{user_model}:chatty", "--arg", "x=f32[4]", "--arg", "x=f32[5]")
    assert result.returncode == 2 and "--arg x is given twice" in result.stderr, result.stderr


def test_bench_of_a_function_that_raises_names_its_error(user_model):
    # Before: the last 300 characters of a compile probe's traceback.
    result = fusejit("bench", f"{user_model}:boom", "--arg", "x=f32[10]")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()   # what the model prints, then one line
    assert lines[0] == "importing the model", result.stderr
    assert len(lines) == 2 and "RuntimeError: the model broke" in lines[1], result.stderr


def test_a_closed_pipe_ends_the_command_quietly(user_model, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), FUSEJIT_CACHE_DIR=str(tmp_path / "cache"))
    command = (f"{sys.executable} -m fusejit dump {user_model}:chatty --arg x=f32[64,64] "
               "--stage source | head -c 10")
    result = subprocess.run(command, shell=True, capture_output=True, text=True, env=env,
                            timeout=300)
    assert "BrokenPipe" not in result.stderr and "Traceback" not in result.stderr, result.stderr
