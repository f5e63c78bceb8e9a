"""`npm run try`: a tiny local checkpoint served to the official `openai` client, then Ctrl-C.

The command runs in a process group of its own; after SIGINT it must exit 0
and leave no process of that group behind (the gateway, server.sh,
tritonserver, the Python-backend stub, vLLM's engine core and worker).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import openai

from conftest import READY_TIMEOUT, REPO


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_try_serves_the_openai_client_and_stops_cleanly(checkpoints: dict[str, Path], tmp_path: Path) -> None:
    log = tmp_path / "try.log"
    tsx = REPO / "node_modules" / "tsx" / "dist" / "cli.mjs"
    with log.open("w") as err:
        process = subprocess.Popen(
            ["node", str(tsx), str(REPO / "scripts/try.ts"), "--model", str(checkpoints["gpt2"]),
             "--ready-timeout", str(READY_TIMEOUT)],
            cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True,
        )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not any(line.startswith("API key:") for line in lines):
            line = process.stdout.readline()
            assert line, f"npm run try ended before printing a key:\n{log.read_text()[-3000:]}"
            lines.append(line.strip())
        found = dict(re.match(r"([^:]+): (.*)", line).groups() for line in lines if ": " in line)  # type: ignore[union-attr]
        client = openai.OpenAI(base_url=found["OpenAI base URL"], api_key=found["API key"], timeout=120)
        completion = client.completions.create(model=found["model"], prompt="The quick brown fox", max_tokens=8, temperature=0)
        assert completion.usage is not None and completion.usage.completion_tokens > 0
        chunks = list(client.completions.create(model=found["model"], prompt="The quick brown fox", max_tokens=8,
                                                temperature=0, stream=True))
        streamed = "".join(c.choices[0].text for c in chunks if c.choices)
        assert streamed == completion.choices[0].text
        # A wrong key is refused: the gateway's keys, not an open port.
        try:
            openai.OpenAI(base_url=found["OpenAI base URL"], api_key="tft-wrong", max_retries=0).completions.create(
                model=found["model"], prompt="x", max_tokens=1)
            raise AssertionError("a wrong key was accepted")
        except openai.AuthenticationError:
            pass
    finally:
        process.send_signal(signal.SIGINT)
        status = process.wait(timeout=120)
    assert status == 0, log.read_text()[-3000:]
    deadline = time.monotonic() + 30
    while group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(1)
    leftovers = subprocess.run(["ps", "-o", "pid,cmd", "-g", str(process.pid)], capture_output=True, text=True).stdout
    assert not group_alive(process.pid), f"processes left behind:\n{leftovers}"
