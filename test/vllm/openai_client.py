"""The official `openai` Python client against the gateway in front of the vLLM model.

Run by test/vllm/clients.test.ts with the vLLM venv (test/vllm/requirements.lock pins openai):

    python openai_client.py <base url> <api key> <model id>

It makes the requests a Python user makes (a completion with logprobs, the
same streamed, a chat with top_logprobs, a refusal) and prints one JSON
object of what the client parsed; the TypeScript test makes the assertions.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai

PROMPT = "The quick brown fox jumps over"


def main() -> int:
    base_url, key, model = sys.argv[1:4]
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=120)
    seen: dict[str, Any] = {"models": [m.id for m in client.models.list()]}
    completion = client.completions.create(model=model, prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3)
    lp = completion.choices[0].logprobs
    assert lp is not None
    seen["completion"] = {
        "text": completion.choices[0].text,
        "tokens": lp.tokens,
        "token_logprobs": lp.token_logprobs,
        "top_logprobs": lp.top_logprobs,
        "usage": completion.usage.model_dump() if completion.usage else None,
    }
    streamed = {"text": "", "tokens": [], "top_logprobs": []}
    for chunk in client.completions.create(model=model, prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3, stream=True):
        if not chunk.choices:
            continue
        streamed["text"] += chunk.choices[0].text
        if chunk.choices[0].logprobs:
            streamed["tokens"] += chunk.choices[0].logprobs.tokens or []
            streamed["top_logprobs"] += chunk.choices[0].logprobs.top_logprobs or []
    seen["stream"] = streamed
    chat = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": PROMPT}], max_tokens=4, temperature=0, logprobs=True, top_logprobs=2
    )
    content = chat.choices[0].logprobs.content if chat.choices[0].logprobs else None
    seen["chat"] = [
        {"token": c.token, "logprob": c.logprob, "top": [[t.token, t.logprob, t.bytes] for t in c.top_logprobs]}
        for c in content or []
    ]
    try:
        client.completions.create(model=model, prompt=PROMPT, logprobs=99)
        seen["refusal"] = None
    except openai.BadRequestError as err:
        seen["refusal"] = {"status": err.status_code, "param": (err.body or {}).get("param") if isinstance(err.body, dict) else None}
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
