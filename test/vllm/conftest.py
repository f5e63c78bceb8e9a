"""The vLLM suite's shared setup: tiny checkpoints and one real CPU tritonserver.

The server (test/triton/server.sh: nvidia-pytriton's tritonserver, the
project's vLLM model from images/vllm) serves each family's checkpoint as its
own model, named after the family, so one server start covers all four; the
gateway-facing name `ensemble` is the try-out's (scripts/try.ts). The server
runs the Python models in this suite's venv (--python-venv) and stops when
the session ends, or when this pytest process is gone (--watch-pid).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (HERE, REPO / "images" / "server" / "python", REPO / "images" / "vllm" / "python"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from make_checkpoints import make_checkpoints  # noqa: E402
from repository import assemble, cpu_settings  # noqa: E402

FAMILIES = ("gptj", "gptneox", "gpt2", "codegen")
READY_TIMEOUT = int(os.environ.get("VLLM_READY_TIMEOUT", "900"))


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("checkpoints")
    return {name: Path(p) for name, p in make_checkpoints(out).items()}


@pytest.fixture(scope="session")
def server(checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("server")
    repository = work / "repository"
    for family in FAMILIES:
        assemble(repository, cpu_settings(checkpoints[family]), name=family)
    state = work / "server.json"
    log = Path(os.environ.get("VLLM_SERVER_LOG", str(work / "tritonserver.log")))
    process = subprocess.Popen(
        ["bash", str(REPO / "test/triton/server.sh"), "--model-repository", str(repository),
         "--python-venv", sys.prefix, "--state-file", str(state), "--log", str(log),
         "--ready-timeout", str(READY_TIMEOUT), "--watch-pid", str(os.getpid())],
        start_new_session=False,
    )
    deadline = time.monotonic() + READY_TIMEOUT + 60
    while not state.is_file():
        if process.poll() is not None:
            pytest.fail(f"tritonserver did not start (server.sh exited {process.returncode}); log: {log}")
        if time.monotonic() > deadline:
            process.send_signal(signal.SIGTERM)
            pytest.fail(f"tritonserver not ready after {READY_TIMEOUT}s; log: {log}")
        time.sleep(1)
    info: dict[str, Any] = json.loads(state.read_text())
    info["repository"] = repository
    try:
        yield info
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
