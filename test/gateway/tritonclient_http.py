"""The official tritonclient (HTTP) against the gateway's KServe v2 API.

Run by test/gateway/tritonclient.test.ts with the real-server venv
(test/triton/requirements.lock pins tritonclient and geventhttpclient):

    python tritonclient_http.py <host:port> <api key> <model id>

It drives the client the way existing users do, with its defaults (binary
tensor data both ways) and with binary_data=False, and prints one JSON object
of what it saw; the TypeScript test makes the assertions, so a failure shows
the whole picture.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def main() -> int:
    url, key, model = sys.argv[1:4]
    auth = {"Authorization": f"Bearer {key}"}
    # tritonclient writes Inference-Header-Content-Length into the headers dict it is given: a fresh one per call.
    headers = dict(auth)
    client = httpclient.InferenceServerClient(url=url, connection_timeout=30.0, network_timeout=60.0)
    seen: dict[str, Any] = {
        "live": client.is_server_live(headers=headers),
        "ready": client.is_server_ready(headers=headers),
        "model_ready": client.is_model_ready(model, headers=headers),
        "server_extensions": client.get_server_metadata(headers=headers).get("extensions", []),
        "metadata_inputs": [i["name"] for i in client.get_model_metadata(model, headers=headers)["inputs"]],
    }

    def inputs(prompts: list[str], max_tokens: list[int], binary: bool = True, sampling: bool = False) -> list[Any]:
        n = len(prompts)
        text = httpclient.InferInput("text_input", [n, 1], "BYTES")
        text.set_data_from_numpy(np.array([[p.encode("utf-8")] for p in prompts], dtype=np.object_), binary_data=binary)
        lengths = httpclient.InferInput("max_tokens", [n, 1], "UINT32")
        lengths.set_data_from_numpy(np.array([[m] for m in max_tokens], dtype=np.uint32), binary_data=binary)
        out = [text, lengths]
        if sampling:
            for name, dtype, value, np_type in (
                ("temperature", "FP32", 0.5, np.float32),
                ("top_k", "UINT32", 1, np.uint32),
                ("random_seed", "UINT64", 2**63 + 7, np.uint64),
            ):
                t = httpclient.InferInput(name, [n, 1], dtype)
                t.set_data_from_numpy(np.full((n, 1), value, dtype=np_type), binary_data=binary)
                out.append(t)
        return out

    def run(name: str, tensors: list[Any], outputs: list[Any] | None = None) -> None:
        result = client.infer(model, tensors, outputs=outputs, headers=dict(auth), request_id=name)
        response = result.get_response()
        texts = result.as_numpy("text_output")
        counts = result.as_numpy("output_token_count")
        prompts = result.as_numpy("input_token_count")
        seen[name] = {
            "id": response.get("id"),
            "binary_outputs": sorted(
                o["name"] for o in response["outputs"] if "binary_data_size" in (o.get("parameters") or {})
            ),
            "text": [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in texts.reshape(-1).tolist()],
            "text_shape": list(texts.shape),
            "output_token_count": counts.reshape(-1).tolist(),
            "input_token_count": prompts.reshape(-1).tolist() if prompts is not None else None,
        }

    batch = (["alpha beta gamma", "delta epsilon", "naïve café — 東京 ✓"], [3, 1, 4])
    # 1. tritonclient's defaults: binary inputs, and (no outputs listed) every output as binary.
    run("binary_default", inputs(*batch))
    # 2. The same request as JSON tensors both ways: must answer the same.
    run(
        "json_only",
        inputs(*batch, binary=False),
        [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("text_output", "output_token_count", "input_token_count")],
    )
    # 3. Mixed: binary inputs, one output binary and the others JSON.
    run(
        "mixed",
        inputs(*batch),
        [
            httpclient.InferRequestedOutput("text_output", binary_data=True),
            httpclient.InferRequestedOutput("output_token_count", binary_data=False),
            httpclient.InferRequestedOutput("input_token_count", binary_data=False),
        ],
    )
    # 4. Binary FP32, UINT32 and UINT64 sampling inputs (a seed above 2^53, which JSON cannot carry exactly).
    run("binary_sampling", inputs(["alpha beta gamma"], [2], sampling=True))

    # 5. Refusals reach the client as InferenceServerException with the HTTP status, and nothing breaks.
    errors = {}
    for name, tensors in (
        ("max_tokens_too_large", inputs(["alpha"], [100000])),
        ("empty_prompt", inputs([""], [2])),
    ):
        try:
            client.infer(model, tensors, headers=dict(auth))
            errors[name] = {"status": None}
        except InferenceServerException as err:
            errors[name] = {"status": err.status(), "message": err.message()}
    try:
        client.infer(model, inputs(["x"], [1]), headers={"Authorization": "Bearer not-a-key"})
        errors["bad_key"] = {"status": None}
    except InferenceServerException as err:
        errors["bad_key"] = {"status": err.status(), "message": err.message()}
    seen["errors"] = errors
    run("after_errors", inputs(*batch))
    client.close()
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
