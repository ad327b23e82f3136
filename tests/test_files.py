"""Every file a command is given goes through one reader (inputs/source.py read_bytes): regular files only,
bounded, read once however often they are named; what it cannot read is said in one line naming the path.

Named pipes, devices and sockets cannot live in git, so these cases are made here, in tmp_path, rather
than in tests/refusals/. The commands run in this process (cli.main), each in a thread with a deadline:
a command that would block on a named pipe fails its test instead of hanging the suite. Permission is
simulated: the suite runs as root, whom a chmod does not stop, so os.open / os.scandir are made to fail
with EACCES as they do for any other user.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import socket
import sys
import threading
from pathlib import Path

import pytest
from jobs import SMALL_JOB as GOOD

from tfjobgen import cli
from tfjobgen.inputs import source
from tfjobgen.kit import owned

DEADLINE = 20  # seconds: a command that takes longer is blocked


def run(*argv: str, cwd: Path, stdin: bytes = b"", stdout: io.StringIO | None = None) -> tuple[int, str, str]:
    """`tfjobgen ARGV` in this process, in `cwd`: (exit code, stdout, stderr); fails when it blocks."""
    out, err, result = stdout or io.StringIO(), io.StringIO(), {}

    def command() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            result["code"] = cli.main(list(argv))

    saved_stdin, saved_cwd, saved_sigterm = sys.stdin, os.getcwd(), signal.getsignal(signal.SIGTERM)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    os.chdir(cwd)
    # cli.main makes SIGTERM unwind, which only the main thread may set: done here, as the command's own main
    # thread does, and undone after (else the test passed only after another test had called cli.main here).
    owned.unwind_on_sigterm()
    try:
        thread = threading.Thread(target=command, daemon=True)
        thread.start()
        thread.join(DEADLINE)
        blocked = thread.is_alive()
        if blocked:
            for fifo in (p for p in cwd.rglob("*") if p.is_fifo()):  # let the blocked open() go
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(5)
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        signal.signal(signal.SIGTERM, saved_sigterm)
    assert not blocked, f"tfjobgen {' '.join(argv)} blocked for {DEADLINE} s"
    return result.get("code", -1), out.getvalue(), err.getvalue()


def refused(code: int, stdout: str, stderr: str, *fragments: str) -> None:
    assert code not in (0, 3), f"exit {code}: {stderr}"
    assert stdout == "", "nothing half-written"
    assert "Traceback" not in stderr and "internal error" not in stderr and "bug" not in stderr, stderr
    for fragment in fragments:
        assert fragment in stderr, f"{fragment!r} not in:\n{stderr}"


# ---- what the path is -------------------------------------------------------------------------

def test_a_named_pipe_among_the_jobs_is_named_not_waited_on(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "good.yaml").write_text(GOOD)
    os.mkfifo(jobs / "pipe.yaml")
    refused(*run("validate", "jobs", cwd=tmp_path), "jobs/pipe.yaml: cannot read: is a named pipe, not a regular file")


def test_a_named_pipe_as_the_profile_is_named_not_waited_on(tmp_path):
    (tmp_path / "job.yaml").write_text(GOOD)
    os.mkfifo(tmp_path / "profile.yaml")
    refused(*run("validate", "job.yaml", "--profile", "profile.yaml", cwd=tmp_path),
            "profile.yaml: cannot read: is a named pipe")


@pytest.mark.parametrize("command", ["validate", "render", "plan"])
def test_a_symlink_to_a_device_is_a_device_not_a_missing_file(tmp_path, command):
    (tmp_path / "job.yaml").symlink_to("/dev/zero")
    code, stdout, stderr = run(command, "job.yaml", cwd=tmp_path)
    refused(code, stdout, stderr, "job.yaml: cannot read: is a character device, not a regular file")
    assert "no such file" not in stderr


def test_a_socket_is_named(tmp_path):
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "job.yaml"))
        refused(*run("render", "job.yaml", cwd=tmp_path), "job.yaml: cannot read: is a socket")


def test_a_folder_as_the_profile_is_a_directory(tmp_path):
    (tmp_path / "job.yaml").write_text(GOOD)
    (tmp_path / "profiles").mkdir()
    refused(*run("validate", "job.yaml", "--profile", "profiles", cwd=tmp_path),
            "profiles: cannot read: is a directory, not a regular file")


def test_a_summary_of_a_named_pipe_is_refused(tmp_path):
    os.mkfifo(tmp_path / "rendered.yaml")
    refused(*run("summary", "rendered.yaml", cwd=tmp_path), "rendered.yaml: cannot read: is a named pipe")


def test_an_unreadable_file_is_permission_denied(tmp_path, monkeypatch):
    (tmp_path / "job.yaml").write_text(GOOD)
    real_open = os.open

    def denied(path, *args, **kwargs):
        if str(path).endswith("job.yaml"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    refused(*run("validate", "job.yaml", cwd=tmp_path), "job.yaml: cannot read: permission denied")


def test_an_unreadable_folder_is_permission_denied_not_empty(tmp_path, monkeypatch):
    """As any user but root meets a folder without r and x (simulated: root lists it anyway)."""
    jobs = tmp_path / "jobs" / "private"
    jobs.mkdir(parents=True)
    (jobs / "job.yaml").write_text(GOOD)
    real_scandir = os.scandir

    def denied(path="."):
        if os.fspath(path).endswith("private"):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    code, stdout, stderr = run("validate", "jobs", cwd=tmp_path)
    refused(code, stdout, stderr, "jobs/private: cannot list the folder: permission denied")
    assert "0 YAML file(s)" not in stderr


# ---- one file named twice ---------------------------------------------------------------------

@pytest.mark.parametrize("paths", [("job.yaml", "./job.yaml"), ("jobs", "jobs/job.yaml"), ("jobs", "jobs"),
                                   ("jobs/job.yaml", "link.yaml")])
def test_a_file_named_twice_is_one_job(tmp_path, paths):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "job.yaml").write_text(GOOD)
    (tmp_path / "job.yaml").write_text(GOOD)
    (tmp_path / "link.yaml").symlink_to("jobs/job.yaml")
    code, stdout, stderr = run("validate", *paths, cwd=tmp_path)
    assert code == 0, stderr
    assert "already used" not in stderr and "1 TrainingJob(s) checked: 0 error(s)" in stderr


def test_render_of_a_file_named_twice_prints_its_objects_once(tmp_path):
    (tmp_path / "job.yaml").write_text(GOOD)
    once = run("render", "job.yaml", cwd=tmp_path)
    assert run("render", "job.yaml", "./job.yaml", cwd=tmp_path) == once and once[0] == 0


# ---- standard input, bounded ------------------------------------------------------------------

class EndlessInput:
    """A standard input that never ends (`yes | tfjobgen summary`): only a bounded read returns."""

    def __init__(self):
        self.asked: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.asked.append(size)
        assert size is not None and size >= 0, "an unbounded read of standard input never returns"
        return b"#" * size

    readinto = None


def test_summary_reads_standard_input_as_far_as_the_limit(monkeypatch, capsys):
    monkeypatch.setattr(source, "MAX_STREAM_BYTES", 1 << 20)
    endless = EndlessInput()
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": endless, "read": endless.read})())
    code = cli.main(["summary"])
    err = capsys.readouterr().err
    assert code == 1 and "<stdin>: input is larger than 1 MiB" in err, err
    assert endless.asked == [(1 << 20) + 1]


# ---- writes: all or nothing (kit/files.py) ----------------------------------------------------

def tree_of(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder under `folder`, hidden ones (temporary files) included."""
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


@pytest.fixture
def rendered(tmp_path) -> Path:
    for name in ("a/one.yaml", "a/two.yaml", "b/three.yaml", "c/gone.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"old {name}\n")
    return tmp_path


def changes(root: Path) -> dict[str, bytes | None]:
    return {str(root / "a/one.yaml"): b"new one\n", str(root / "a/new.yaml"): b"new\n",
            str(root / "b/three.yaml"): b"new three\n", str(root / "c/gone.yaml"): None,
            str(root / "d/e/made.yaml"): b"made\n"}


def test_files_are_all_written_and_removed(rendered):
    from tfjobgen.kit import files

    files.write_files(changes(rendered), prune_under=str(rendered))
    assert tree_of(rendered) == {"a": None, "a/new.yaml": b"new\n", "a/one.yaml": b"new one\n",
                                 "a/two.yaml": b"old a/two.yaml\n", "b": None, "b/three.yaml": b"new three\n",
                                 "d": None, "d/e": None, "d/e/made.yaml": b"made\n"}


@pytest.mark.parametrize("failing_call", [1, 2, 3, 4])
def test_a_move_that_fails_midway_puts_every_file_back(rendered, monkeypatch, failing_call):
    from tfjobgen.kit import files

    before, calls, real_replace = tree_of(rendered), [], os.replace

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == failing_call:
            raise OSError(errno.EIO, "Input/output error", dst)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(files.WriteFailed, match="cannot write .*: input/output error"):
        files.write_files(changes(rendered), prune_under=str(rendered))
    assert tree_of(rendered) == before


def test_a_full_disk_changes_nothing(rendered, monkeypatch):
    from tfjobgen.kit import files

    before, real_write, written = tree_of(rendered), os.write, []

    def write(fd, data):
        written.append(fd)
        if len(written) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(files.WriteFailed, match="b/three.yaml: no space left on the device"):
        files.write_files(changes(rendered), prune_under=str(rendered))
    assert tree_of(rendered) == before


def test_a_file_where_a_folder_must_be_changes_nothing(rendered):
    from tfjobgen.kit import files

    (rendered / "d").write_text("in the way\n")
    before = tree_of(rendered)
    with pytest.raises(files.WriteFailed, match="d/e/made.yaml: .*/d is a file, not a folder"):
        files.write_files(changes(rendered), prune_under=str(rendered))
    assert tree_of(rendered) == before


def test_a_folder_that_refuses_new_files_is_named(rendered, monkeypatch):
    """As a read-only folder does (simulated: root writes into a chmod-ed folder anyway)."""
    from tfjobgen.kit import files

    before, real_open = tree_of(rendered), os.open

    def read_only(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and os.path.dirname(path) == str(rendered / "b"):
            raise OSError(errno.EROFS, "Read-only file system", path)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(files.WriteFailed) as failed:
        files.write_files(changes(rendered), prune_under=str(rendered))
    assert str(failed.value) == f"cannot write {rendered / 'b'}: read-only file system"
    assert tree_of(rendered) == before


def test_a_device_is_written_into_never_replaced(tmp_path):
    """`-o /dev/stdout`, `--png /dev/null`: a rename would put a regular file in place of the device.
    (Only links to devices are named here: were the writer wrong, it would replace a link, not a device.)"""
    from tfjobgen.kit import files

    (tmp_path / "null").symlink_to("/dev/null")
    files.write_file(str(tmp_path / "null"), "report\n")
    assert (tmp_path / "null").is_symlink() and (tmp_path / "null").is_char_device()
    (tmp_path / "full").symlink_to("/dev/full")
    with pytest.raises(files.WriteFailed, match="full: no space left on the device$"):
        files.write_file(str(tmp_path / "full"), "report\n")
    assert (tmp_path / "full").is_symlink() and (tmp_path / "full").is_char_device()
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(files.WriteFailed, match="pipe: it is a named pipe, not a regular file"):
        files.write_files({str(tmp_path / "pipe"): b"x", str(tmp_path / "a"): b"y"})
    assert (tmp_path / "pipe").is_fifo() and not (tmp_path / "a").exists()


class FullDisk(io.StringIO):
    """Standard output on a full disk (`tfjobgen render job.yaml > /dev/full`)."""

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def getvalue(self) -> str:
        return ""


@pytest.mark.parametrize("argv", [("render", "job.yaml"), ("schema",), ("summary", "rendered.yaml"),
                                  ("plan", "job.yaml"), ("krm",), ("krm", "profile.yaml")])
def test_standard_output_on_a_full_disk_is_said_not_a_bug(tmp_path, argv):
    (tmp_path / "job.yaml").write_text(GOOD)
    (tmp_path / "rendered.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    (tmp_path / "profile.yaml").write_text("apiVersion: tfjobgen.dev/v1alpha1\nkind: ClusterProfile\n"
                                           "metadata: {name: p}\nspec: {allowNoJobs: true}\n")
    stdin = (b"apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" if argv == ("krm",)
             else GOOD.encode())
    code, _, stderr = run(*argv, cwd=tmp_path, stdin=stdin, stdout=FullDisk())
    assert code == 1, stderr
    assert "tfjobgen: cannot write standard output: no space left on" in stderr, stderr
    assert "internal error" not in stderr and "bug" not in stderr


@pytest.mark.parametrize("kind", ["device", "pipe"])
def test_a_kubeconfig_that_is_a_device_or_a_pipe_is_named_before_any_request(tmp_path, kind):
    if kind == "device":
        (tmp_path / "kubeconfig").symlink_to("/dev/zero")  # the client would read it for ever
    else:
        os.mkfifo(tmp_path / "kubeconfig")
    what = "a character device" if kind == "device" else "a named pipe"
    refused(*run("status", "wide-deep", "-n", "ml", "--kubeconfig", "kubeconfig", cwd=tmp_path),
            f"tfjobgen status: kubeconfig: cannot read: is {what}, not a regular file")


# ---- a component of the local cluster that stops -------------------------------------------------

GO_PANIC = """\
{"level":"info","ts":"2025-01-01T00:00:00Z","caller":"embed/etcd.go:138","msg":"configuring peer listeners"}
{"level":"panic","ts":"2025-01-01T00:00:01Z","caller":"backend/backend.go:205","msg":"failed to open database",\
"path":"data/member/snap/db","error":"cannot allocate memory"}
panic: failed to open database

goroutine 143 [running]:
go.uber.org/zap/zapcore.CheckWriteAction.OnWrite(0x0?, 0x0?, {0x0?, 0x0?, 0xc000?})
\tgo.uber.org/zap@v1.27.0/zapcore/entry.go:196 +0x54
created by go.etcd.io/etcd/server/v3/storage.OpenBackend in goroutine 1
\tgo.etcd.io/etcd/server/v3@v3.6.16/storage/backend.go:75 +0x1a5
"""
GO_FATAL = """\
fatal error: runtime: cannot allocate memory

runtime stack:
runtime.throw({0x2a0b1d1?, 0x0?})
\truntime/panic.go:1101 +0x48
"""


@pytest.mark.parametrize("log,said", [
    (GO_PANIC, "panic: failed to open database: cannot allocate memory"),
    (GO_FATAL, "fatal error: runtime: cannot allocate memory"),
    ("I0101 listening\nE0101 12:00:00 server.go:1] unable to bind 127.0.0.1:6443: address in use\n",
     "E0101 12:00:00 server.go:1] unable to bind 127.0.0.1:6443: address in use"),
    ("", "its log is empty")])
def test_a_stopped_component_is_said_in_one_line_with_its_log(tmp_path, log, said):
    from tfjobgen.cluster import processes

    (tmp_path / "etcd.log").write_text(log)
    assert processes.why_stopped(tmp_path / "etcd.log") == said


def test_a_file_over_the_file_size_limit_is_named_with_the_limit(tmp_path):
    """Python ignores SIGXFSZ, so a write past RLIMIT_FSIZE (ulimit -f) is EFBIG: said as the limit it is."""
    import subprocess

    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
              "from tfjobgen.kit import files\n"
              "try:\n"
              "    files.write_file(sys.argv[1], 'x' * 10000)\n"
              "except files.WriteFailed as failed:\n"
              "    print(failed)\n")
    target = tmp_path / "report.md"
    proc = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])})
    assert proc.stdout.strip() == (f"cannot write {target}: larger than this process may write "
                                   "(its file-size limit, ulimit -f, is 4096 bytes)"), proc.stdout + proc.stderr
    assert not target.exists() and not list(tmp_path.iterdir()), "nothing half-written"


def test_a_write_error_that_names_no_file_is_not_blamed_on_standard_output(tmp_path, monkeypatch):
    """An error without a file name (a library's own write) said "cannot write standard output" whatever failed:
    only a standard output that still refuses to be written is blamed."""
    from tfjobgen.expand import pipeline

    def too_large(*args, **kwargs):
        raise OSError(errno.EFBIG, "File too large")

    (tmp_path / "job.yaml").write_text(GOOD)
    monkeypatch.setattr(pipeline, "expand", too_large)
    code, out, err = run("validate", "job.yaml", cwd=tmp_path)
    assert code == 1 and out == "" and "standard output" not in err, err
    assert err.startswith("tfjobgen: cannot write a file (the system did not say which): larger than ") and \
        len(err.splitlines()) == 1, err


def test_standard_output_cut_short_by_the_file_size_limit_is_an_error_not_a_success(tmp_path):
    """Past RLIMIT_FSIZE Python's buffered stdout keeps the bytes that fit and drops the rest without an error:
    `render > file` exited 0 with half the objects. A regular file that grew less than was written is said."""
    import resource
    import subprocess

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    (tmp_path / "job.yaml").write_text(GOOD)
    with open(tmp_path / "out.yaml", "w") as out:
        proc = subprocess.run([sys.executable, "-m", "tfjobgen", "render", "job.yaml"], stdout=out,
                              stderr=subprocess.PIPE, text=True, cwd=tmp_path, timeout=60, preexec_fn=limited,
                              env={**os.environ, "PYTHONPATH": str(Path(cli.__file__).parents[1])})
    assert (tmp_path / "out.yaml").stat().st_size == 4096, "the limit cut it"
    assert proc.returncode == 1 and proc.stderr.splitlines()[-1] == (
        "tfjobgen: cannot write standard output: larger than this process may write (its file-size limit, "
        "ulimit -f, is 4096 bytes)"), proc.stderr
