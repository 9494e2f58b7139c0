"""`run(command, ...)`: `subprocess.run` for the Python programs the tests start, each forked from one server
per test process that has imported torch, SymPy and the libraries Dynamo and Inductor import that import none
of what tuned-kernels waits for (`PRELOADED`), and nothing of tuned-kernels', instead of a new interpreter
importing them again (about 1.9 s of CPU time a program on this suite's machines for torch, about 1 s more for
the rest where a program imports Dynamo or Inductor).

A forked program starts as `python SCRIPT ARGS`, `python -c CODE ARGS` or `python -m MODULE ARGS` would, with
`env` and in `cwd`: its argv, `sys.path` (the script's folder, the env's PYTHONPATH, the interpreter's own),
os.environ and the C library's environment, a new `__main__`, standard streams on the files given (standard
input empty unless `input` is), tuned_kernels.pth's start-up line run with its env, its exit code, and at exit
what an interpreter does (atexit, flushing, joining threads). What the interpreter or torch read from the
environment only as they start (`STARTUP`) is the server's: a program whose environment differs there, or a
command in any other form, runs as a new process (`subprocess.run`), as does every program when
TESTS_FORKED_PYTHON=0.

A program that `capture` starts (`capture ... -- python PROGRAM`) is forked too: its `python` is replaced by a
launcher (this file's `launch`, on this Python without its site) that has the server fork the program on the
launcher's own streams, passes SIGINT and SIGTERM on, and ends as the program does.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# what Dynamo and Inductor import (torch's distributed tensors, networkx for AOTAutograd's partitioner, jinja2
# for Inductor's templates, ...) that imports none of `WAITED_FOR`: the server imports them once
PRELOADED = (
    *("torch.distributed.tensor", "torch.distributed.fsdp._fully_shard", "torch.onnx.ops"),
    *("torch._higher_order_ops.triton_kernel_wrap", "torch._functorch._aot_autograd.subclass_codegen"),
    *("networkx", "jinja2", "filelock", "numpy.random", "google.protobuf.text_format"),
)
# what tuned-kernels' start-up waits for a program to import (and Dynamo, which imports them): never the server's
WAITED_FOR = ("triton", "torch._inductor", "torch._dynamo", "helion", "tuned_kernels")
STARTUP = (  # the names or prefixes of what they read (torch's config modules: TORCH_*, TORCHDYNAMO_*, ...)
    *("PYTHON", "LC_", "LANG", "LD_", "MALLOC_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_"),
    *("TORCH_", "TORCHDYNAMO_", "TORCHEXPORT_", "TORCHINDUCTOR_FORCE_DISABLE_CACHES", "SYMPY_"),
    *("NETWORKX_", "PROTOCOL_BUFFERS_"),
)
ENABLED = os.environ.get("TESTS_FORKED_PYTHON", "1") != "0"
START_S = 120  # the server's own start: an interpreter importing torch
_SERVER: dict[str, Any] = {}


def run(
    command: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float,
    input: str | None = None,
    capture_output: bool = True,
    text: bool = True,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The program `command` names (`[sys.executable, ...]`), its output captured as text."""
    assert capture_output and text, "forked programs always have their output captured as text"
    environment = dict(os.environ if env is None else env)
    server = _server() if ENABLED and _forkable(command, environment) else None
    if server is None:
        done = subprocess.run(command, env=environment, cwd=cwd, timeout=timeout, input=input,
                              capture_output=True, text=True, check=False)  # fmt: skip
    else:
        command, environment = _launched_within(command, environment)
        done = _forked(server, command, environment, str(cwd or os.getcwd()), timeout, input)
    if check and done.returncode:
        raise subprocess.CalledProcessError(done.returncode, command, done.stdout, done.stderr)
    return done


def waited_for(modules: Iterable[str]) -> list[str]:
    """The modules of `modules` that are `WAITED_FOR` or inside one of them, sorted."""
    return sorted({m for m in modules for w in WAITED_FOR if m == w or m.startswith(w + ".")})


def _startup_view(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(STARTUP) and k != "PYTHONPATH"}


def _server_environment() -> dict[str, str]:
    own = ("TUNED_KERNELS", "PYTHONPATH")
    return {k: v for k, v in os.environ.items() if not k.startswith(own)}


def _forkable(command: list[str], env: dict[str, str]) -> bool:
    if len(command) < 2 or command[0] != sys.executable:
        return False
    if command[1].startswith("-") and (command[1] not in ("-c", "-m") or len(command) < 3):
        return False
    running = _SERVER.get("pid") == os.getpid()  # a server started reads what it started with
    return _startup_view(env) == (_SERVER["startup"] if running else _startup_view(_server_environment()))


def _server() -> str | None:
    """The server's socket, the server started at the first call of this process; None where it cannot start
    here (said once: the programs then start as new interpreters)."""
    if _SERVER.get("pid") == os.getpid():
        return str(_SERVER["path"]) if _SERVER["path"] else None
    folder = tempfile.mkdtemp(prefix="tests-forked-python-")
    path = os.path.join(folder, "socket")
    here = str(Path(__file__).parent)
    boot = f"import sys; sys.path.insert(0, {here!r}); import forked_python as f; sys.path.remove({here!r}); f.main()"
    environment = _server_environment()
    server = subprocess.Popen([sys.executable, "-c", boot, path, str(os.getpid())], env=environment,
                              stdin=subprocess.DEVNULL, cwd=folder)  # fmt: skip
    atexit.register(shutil.rmtree, folder, True)
    atexit.register(server.wait, 60)  # its CPU time, and its programs', counted as this process's children's
    atexit.register(server.kill)  # runs first
    deadline = time.monotonic() + START_S
    while not os.path.exists(path + ".ready"):
        if server.poll() is not None or time.monotonic() > deadline:
            print(f"forked_python: no server here (exit {server.poll()}): new interpreters", file=sys.stderr)
            _SERVER.update(pid=os.getpid(), path=None, startup={})
            return None
        time.sleep(0.01)
    _SERVER.update(pid=os.getpid(), path=path, startup=_startup_view(environment))
    return path


def _forked(
    server: str, command: list[str], env: dict[str, str], cwd: str, timeout: float, input: str | None
) -> Any:
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        stdin.write((input or "").encode())
        stdin.seek(0)
        code = _program(server, command, env, cwd, [stdin.fileno(), out.fileno(), err.fileno()], timeout)
        texts = []
        for stream in (out, err):
            stream.seek(0)
            texts.append(stream.read().decode(errors="replace").replace("\r\n", "\n"))
    if code is None:
        raise subprocess.TimeoutExpired(command, timeout, output=texts[0], stderr=texts[1])
    return subprocess.CompletedProcess(command, code, texts[0], texts[1])


def _program(
    server: str,
    command: list[str],
    env: dict[str, str],
    cwd: str,
    fds: list[int],
    timeout: float | None,
    passes_signals: bool = False,
) -> int | None:
    """`command` forked by the server with `fds` as its standard streams: its exit code (negative: the signal
    that ended it), None when it ran past `timeout` and was killed. With `passes_signals` (the launcher),
    SIGINT and SIGTERM this process gets while the program runs go to the program."""
    request = json.dumps({"args": command[1:], "env": env, "cwd": cwd}).encode()
    started: list[int] = []  # the program's pid, once forked (a signal before then has no one to go to)
    if passes_signals:
        for passed in (signal.SIGINT, signal.SIGTERM):
            signal.signal(passed, lambda number, _: started and os.kill(started[0], number))
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.connect(server)
        socket.send_fds(conn, [request], fds)
        pid = int(conn.recv(64))
        started.append(pid)
        conn.settimeout(timeout)
        try:
            return int(conn.recv(64))
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            conn.settimeout(60)
            conn.recv(64)
            return None


# --- a program that a tool the tests run starts itself (capture's): forked as well ---

SERVER_VARIABLE = "TESTS_FORKED_PYTHON_SERVER"  # the socket, for the launcher in the programs' environment


def _launched_within(command: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """`command` and `env` with the Python program `capture ... -- PYTHON PROGRAM` starts given to the
    launcher instead of a new interpreter: the launcher has the server fork it (where its environment allows)."""
    if command[1:4] != ["-m", "tuned_kernels", "capture"] or "--" not in command:
        return command, env
    at = command.index("--") + 1
    if command[at : at + 1] != [sys.executable]:
        return command, env
    launcher = _launcher()
    return [*command[:at], launcher, *command[at + 1 :]], {**env, SERVER_VARIABLE: str(_SERVER["path"])}


def _launcher() -> str:
    """The launcher of this process's server: a shell script beside its socket that runs this file as
    `launch` on this Python, isolated and without its site (0.03 s)."""
    path = Path(str(_SERVER["path"]) + ".launcher")
    if not path.exists():
        this = shlex.quote(str(Path(__file__).resolve()))
        Path(str(_SERVER["path"]) + ".startup").write_text(json.dumps(_SERVER["startup"]))
        path.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {this} launch "$@"\n')
        path.chmod(0o755)
    return str(path)


def launch(args: list[str]) -> None:
    """`python ARGS` forked by the server named in the environment, on this process's standard streams, this
    process ending as it ends; a new interpreter (`exec`) where the environment differs from the server's in
    what Python and torch read as they start, or the server has gone."""
    env = dict(os.environ)
    server = env.pop(SERVER_VARIABLE, "")
    command = [sys.executable, *args]
    try:
        startup = json.loads(Path(server + ".startup").read_text())
    except (OSError, ValueError):
        startup = None
    if startup != _startup_view(env) or len(args) < 1:
        os.execve(sys.executable, command, env)
    try:
        code = _program(server, command, env, os.getcwd(), [0, 1, 2], None, passes_signals=True)
    except OSError:  # the server has ended: its test process is gone
        os.execve(sys.executable, command, env)
    assert code is not None
    if code < 0:  # ended by a signal: so does this process, for its caller to see
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


# --- the server and its forked programs ---


def main() -> None:
    """The server (`python -c BOOT SOCKET PARENT`): each forked program returns here to become itself."""
    import gc
    import importlib
    import selectors

    import sympy  # noqa: F401 - and what every program that compiles would, reading SYMPY_* as it starts
    import torch  # noqa: F401 - what every program would import again

    for name in PRELOADED:
        importlib.import_module(name)
    imported = waited_for(sys.modules)
    if imported:  # a torch whose libraries import them: no server (its programs start as new interpreters)
        raise SystemExit(f"forked_python: preloading imported {', '.join(imported[:3])}")
    path, parent = sys.argv[1], int(sys.argv[2])
    os.close(os.pidfd_open(os.getpid()))  # what waiting for its programs needs (Linux 5.3): else no server
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    gc.freeze()  # what the server holds stays out of every program's collections: no copies of its pages
    Path(path + ".ready").touch()
    waiting = selectors.DefaultSelector()
    waiting.register(listener, selectors.EVENT_READ, None)
    while os.getppid() == parent:
        for key, _ in waiting.select(timeout=1.0):
            if key.data is None:
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                pid = os.fork()
                if pid == 0:  # the program: nothing of the server's stays open in it
                    for held in list(waiting.get_map().values()):
                        if held.data is not None:  # another program's exit to wait for, its caller's socket
                            os.close(held.fd)
                            held.data[1].close()
                    waiting.close()
                    listener.close()
                    conn.close()
                    _become(json.loads(message), fds)
                for fd in fds:
                    os.close(fd)
                conn.send(str(pid).encode())
                waiting.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, conn))
            else:
                pid, conn = key.data
                waiting.unregister(key.fd)
                os.close(key.fd)
                _, status = os.waitpid(pid, 0)
                conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # its test process has ended


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """This forked process as the program `request` names: never returns (SystemExit ends the interpreter)."""
    import builtins
    import io
    import types

    for at, fd in enumerate(fds):
        os.dup2(fd, at)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None
    encoding = "utf-8"
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding
    )
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)), encoding, "backslashreplace", line_buffering=True
    )
    args: list[str] = request["args"]
    base = sys.path[1:]  # the server's, whose environment has no PYTHONPATH
    extra = [os.path.abspath(p) for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    if args[0] == "-c":
        first, sys.argv = "", ["-c", *args[2:]]
    elif args[0] == "-m":
        first, sys.argv = os.getcwd(), ["-m", *args[2:]]
    else:
        first, sys.argv = os.path.dirname(os.path.realpath(args[0])), list(args)
    sys.path[:] = [first, *extra, *base]
    sys.orig_argv = [sys.executable, *args]
    for site_dir in __import__("site").getsitepackages():
        for pth in Path(site_dir).glob("*.pth"):
            if "TUNED_KERNELS" in (lines := pth.read_text()):
                for line in lines.splitlines():
                    if line.startswith("import"):
                        exec(line)  # as site runs a .pth line, now with this program's environment
    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(__builtins__=builtins, __spec__=None, __loader__=None)
    if args[0] == "-m":
        source, filename = f"import runpy; runpy._run_module_as_main({args[1]!r})", "<frozen runpy>"
    elif args[0] == "-c":
        source, filename = args[1], "<string>"
    else:
        source, filename = Path(args[0]).read_text(), args[0]
        main_module.__file__ = filename
    sys.modules["__main__"] = main_module
    try:
        exec(compile(source, filename, "exec", dont_inherit=True), main_module.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # as the interpreter reports it: the program's frames only
        error = error.with_traceback(error.__traceback__.tb_next if error.__traceback__ else None)
        sys.excepthook(type(error), error, error.__traceback__)
        raise SystemExit(1) from None
    raise SystemExit(0)


if __name__ == "__main__" and sys.argv[1:2] == ["launch"]:
    launch(sys.argv[2:])
