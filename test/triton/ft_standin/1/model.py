"""CPU stand-in for the `fastertransformer` model, for real-server tests.

The FasterTransformer backend needs a GPU, so the integration tests serve this
Python-backend model under the name `fastertransformer`, with the config.pbtxt
the project's renderer produces for the real backend (only `backend` swapped).

It is strict about the tensor contract of the real FT backend, which it knows
independently of the renderer: at load it compares the rendered config's
inputs and outputs (names, types, dims, reshape, optional) with that contract
and refuses to load on any difference, so a renderer drift fails the tests
instead of being silently accepted by a lenient stand-in.

Generation is deterministic, so tests can predict the text:
- output_ids = the prompt, then generated tokens, then end_id padding
  (beam width 1, prompt included, as FT returns it);
- generated token j is prompt[(j + shift) % prompt_length], where shift is
  random_seed % prompt_length when random_seed is given, else 0: the model
  "echoes" the prompt cyclically;
- a token that would complete a bad word is skipped (the next prompt token is
  tried instead); when every candidate is banned, generation ends;
- generation ends after L tokens, when the next token is end_id (end_id is
  not counted), or right after a stop word is completed (the stop word is
  counted, as FT does). L is the LONGEST request_output_len among all
  requests of one execute() call, for every item: FT sizes a batch's
  generation by its longest request, so a short request batched with a long
  one comes back over-generated and postprocessing must cap it;
- sequence_length = prompt length + generated tokens.
- beam_width (default 1) gives each item that many beams: beam b generates
  with shift + b, so output_ids is [batch, beam, tokens] and sequence_length
  [batch, beam], as FT returns them;
- with is_return_log_probs true (read from the first item, as FT's model
  instance reads it for the whole batch), cum_log_probs [batch, beam] and
  output_log_probs [batch, beam, L] are returned too: generated token t at step
  j has log probability -(1 + (t + j) % 7) / 8, steps after the end are 0, and
  cum_log_probs is the sum over the generated tokens (FT backend
  docs/gptj_guide.md names and shapes; FT writes them only when asked).
Every optional input it receives is logged once per request, so tests can
check the ensemble's parameter wiring in the server log.

Decoupled (streaming) mode, when the rendered config sets
`model_transaction_policy { decoupled: true }`, follows the real backend's
(fastertransformer_backend src/libfastertransformer.cc, streaming_callback):
after every generation step each request of the batch gets a response with
the whole output so far (output_ids of the prompt plus the tokens generated
up to that step, sequence_length to match), flags 0; when the batch is done,
one more response with the complete output carries the FINAL flag. Steps
take TRITONFT_STANDIN_STEP_MS milliseconds (default 0), so tests can see
chunks arrive while generation is still running; the instance is busy for
the whole batch, as FT's is.

Holding: while the file named by TRITONFT_STANDIN_HOLD_FILE exists, execute()
waits before generating (at most HOLD_MAX_SECONDS), keeping the instance
busy. A test creates the file to fill Triton's queues deterministically,
without racing a timer, and removes it to let everything finish.

Faults (a canary's stand-in): while the file named by
TRITONFT_STANDIN_FAULT_FILE holds JSON {"errorEvery": N, "firstTokenDelayMs":
D, "stepMs": S} (each optional), every Nth request this instance receives is
answered with an error (a Triton error response, as a failing backend's),
deterministically rather than at random; every batch waits D ms before its
first step (the time to first token grows by D); and steps take S ms instead
of TRITONFT_STANDIN_STEP_MS (longer streams). The file is read at every
execute(), so a test turns faults on and off while the server runs; no file,
no faults.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import triton_python_backend_utils as pb_utils

# The FT backend's tensor contract (names, Triton types, dims per batch item,
# reshape, optional), as the real backend reads it.
FT_INPUTS: dict[str, tuple[str, list[int], list[int] | None, bool]] = {
    "input_ids": ("TYPE_UINT32", [-1], None, False),
    "input_lengths": ("TYPE_UINT32", [1], [], False),
    "request_output_len": ("TYPE_UINT32", [-1], None, False),
    "runtime_top_k": ("TYPE_UINT32", [1], [], True),
    "runtime_top_p": ("TYPE_FP32", [1], [], True),
    "temperature": ("TYPE_FP32", [1], [], True),
    "repetition_penalty": ("TYPE_FP32", [1], [], True),
    "random_seed": ("TYPE_UINT64", [1], [], True),
    "presence_penalty": ("TYPE_FP32", [1], [], True),
    "is_return_log_probs": ("TYPE_BOOL", [1], [], True),
    "beam_width": ("TYPE_UINT32", [1], [], True),
    "start_id": ("TYPE_UINT32", [1], [], True),
    "end_id": ("TYPE_UINT32", [1], [], True),
    "bad_words_list": ("TYPE_INT32", [2, -1], None, True),
    "stop_words_list": ("TYPE_INT32", [2, -1], None, True),
}
FT_OUTPUTS: dict[str, tuple[str, list[int]]] = {
    "output_ids": ("TYPE_UINT32", [-1, -1]),
    "sequence_length": ("TYPE_UINT32", [-1]),
    "cum_log_probs": ("TYPE_FP32", [-1]),
    "output_log_probs": ("TYPE_FP32", [-1, -1]),
}
SCALAR_OPTIONALS = (
    "runtime_top_k",
    "runtime_top_p",
    "temperature",
    "repetition_penalty",
    "random_seed",
    "presence_penalty",
    "is_return_log_probs",
    "beam_width",
    "start_id",
)


def log_prob(token: int, step: int) -> float:
    """The stand-in's log probability of generating `token` at generation step `step` (0-based)."""
    return -(1 + (token + step) % 7) / 8


def _dims(value: Any) -> list[int]:
    # Triton's JSON form of the config may carry int64 dims as strings.
    return [int(d) for d in (value or [])]


def contract_violations(model_config: dict[str, Any]) -> list[str]:
    """Differences between a rendered config and the FT tensor contract."""
    problems: list[str] = []
    if int(model_config.get("max_batch_size", 0)) <= 0:
        problems.append("max_batch_size must be > 0 (dims are per batch item)")
    seen_inputs = {}
    for spec in model_config.get("input", []):
        seen_inputs[spec["name"]] = spec
    for name in sorted(set(seen_inputs) - set(FT_INPUTS)):
        problems.append(f"input {name!r} is not an FT backend input")
    for name, (dtype, dims, reshape, optional) in FT_INPUTS.items():
        spec = seen_inputs.get(name)
        if spec is None:
            if not optional:
                problems.append(f"required input {name!r} is missing")
            continue
        if spec.get("data_type") != dtype:
            problems.append(f"input {name!r}: data_type {spec.get('data_type')} != {dtype}")
        if _dims(spec.get("dims")) != dims:
            problems.append(f"input {name!r}: dims {_dims(spec.get('dims'))} != {dims}")
        got_reshape = spec.get("reshape")
        got = None if got_reshape is None else _dims(got_reshape.get("shape"))
        if got != reshape:
            problems.append(f"input {name!r}: reshape {got} != {reshape}")
        if bool(spec.get("optional", False)) != optional:
            problems.append(f"input {name!r}: optional {bool(spec.get('optional', False))} != {optional}")
    seen_outputs = {spec["name"]: spec for spec in model_config.get("output", [])}
    for name in sorted(set(seen_outputs) - set(FT_OUTPUTS)):
        problems.append(f"output {name!r} is not emitted by this contract")
    for name, (dtype, dims) in FT_OUTPUTS.items():
        spec = seen_outputs.get(name)
        if spec is None:
            problems.append(f"output {name!r} is missing")
            continue
        if spec.get("data_type") != dtype:
            problems.append(f"output {name!r}: data_type {spec.get('data_type')} != {dtype}")
        if _dims(spec.get("dims")) != dims:
            problems.append(f"output {name!r}: dims {_dims(spec.get('dims'))} != {dims}")
    return problems


def split_words(rows: np.ndarray) -> list[list[int]]:
    """Decode one item's [2, N] word list (ids row, cumulative end offsets row)."""
    ids, offsets = rows[0], rows[1]
    words: list[list[int]] = []
    start = 0
    for end in offsets:
        if end < 0:
            break
        end = int(end)
        if end > start:
            words.append([int(t) for t in ids[start:end]])
        start = end
    return words


def ends_with_word(sequence: list[int], words: list[list[int]]) -> bool:
    return any(len(w) <= len(sequence) and sequence[len(sequence) - len(w):] == w for w in words)


def generate(
    prompt: list[int],
    max_new: int,
    end_id: int | None,
    shift: int,
    stop_words: list[list[int]],
    bad_words: list[list[int]],
) -> list[int]:
    generated: list[int] = []
    position = shift
    while len(generated) < max_new:
        token = None
        for attempt in range(len(prompt)):
            candidate = prompt[(position + attempt) % len(prompt)]
            if not ends_with_word(prompt + generated + [candidate], bad_words):
                token = candidate
                position += attempt
                break
        if token is None or token == end_id:
            break
        generated.append(token)
        position += 1
        if ends_with_word(prompt + generated, stop_words):
            break
    return generated


@dataclass
class Generation:
    """One request's batch: per item and beam the prompt plus every generated token."""

    # rows[item][beam]
    rows: list[list[list[int]]]
    prompt_lengths: list[int]
    width: int
    pads: list[int]
    # FT's request_output_len of the batch: the last dim of output_log_probs.
    output_len: int
    log_probs: bool

    def steps(self) -> int:
        return max(len(beam) - p for beams, p in zip(self.rows, self.prompt_lengths) for beam in beams)

    def response(self, step: int | None) -> Any:
        """FT's outputs after `step` generated tokens (None: all of them), end-id padded."""
        batch = len(self.rows)
        beams = len(self.rows[0])
        output_ids = np.zeros((batch, beams, self.width), dtype=np.uint32)
        lengths = np.zeros((batch, beams), dtype=np.uint32)
        cum = np.zeros((batch, beams), dtype=np.float32)
        per_step = np.zeros((batch, beams, self.output_len), dtype=np.float32)
        for i, item in enumerate(self.rows):
            for b, row in enumerate(item):
                cut = row if step is None else row[: self.prompt_lengths[i] + step]
                output_ids[i, b, : len(cut)] = cut
                output_ids[i, b, len(cut):] = self.pads[i]
                lengths[i, b] = len(cut)
                for j, token in enumerate(cut[self.prompt_lengths[i]:]):
                    per_step[i, b, j] = log_prob(token, j)
                cum[i, b] = float(per_step[i, b].sum())
        tensors = [
            pb_utils.Tensor("output_ids", output_ids),
            pb_utils.Tensor("sequence_length", lengths),
        ]
        if self.log_probs:
            tensors += [pb_utils.Tensor("cum_log_probs", cum), pb_utils.Tensor("output_log_probs", per_step)]
        return pb_utils.InferenceResponse(output_tensors=tensors)


# Longest a hold file can keep the instance busy.
HOLD_MAX_SECONDS = 120.0


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        problems = contract_violations(config)
        if problems:
            raise pb_utils.TritonModelException(
                "fastertransformer stand-in: rendered config breaks the FT tensor contract: " + "; ".join(problems)
            )
        self.name = config.get("name", "fastertransformer")
        policy = config.get("model_transaction_policy") or {}
        self.decoupled = bool(policy.get("decoupled", False))
        self.step_seconds = float(os.environ.get("TRITONFT_STANDIN_STEP_MS", "0")) / 1000.0
        self.hold_file = os.environ.get("TRITONFT_STANDIN_HOLD_FILE", "")
        self.fault_file = os.environ.get("TRITONFT_STANDIN_FAULT_FILE", "")
        self.received = 0

    def _hold(self) -> None:
        """Wait while the test's hold file exists (module docstring); a forgotten file cannot hang a run."""
        if not self.hold_file:
            return
        deadline = time.monotonic() + HOLD_MAX_SECONDS
        while os.path.exists(self.hold_file) and time.monotonic() < deadline:
            time.sleep(0.01)

    def _faults(self) -> tuple[int, float, float]:
        """(errorEvery, first-token delay, step) in seconds from the fault file (module docstring); none without one."""
        none = (0, 0.0, self.step_seconds)
        if not self.fault_file:
            return none
        try:
            with open(self.fault_file, encoding="utf-8") as f:
                faults = json.load(f)
        except (OSError, ValueError):
            return none
        return (
            int(faults.get("errorEvery", 0)),
            float(faults.get("firstTokenDelayMs", 0)) / 1000.0,
            float(faults["stepMs"]) / 1000.0 if "stepMs" in faults else self.step_seconds,
        )

    def _optional(self, request: Any, name: str) -> np.ndarray | None:
        tensor = pb_utils.get_input_tensor_by_name(request, name)
        return None if tensor is None else tensor.as_numpy()

    def _generate_one(self, request: Any, batch_output_len: int) -> "Generation":
        input_ids = self._optional(request, "input_ids")
        input_lengths = self._optional(request, "input_lengths")
        request_output_len = self._optional(request, "request_output_len")
        if input_ids is None or input_lengths is None or request_output_len is None:
            raise ValueError("input_ids, input_lengths and request_output_len are required")
        for name, array, want in (
            ("input_ids", input_ids, np.uint32),
            ("input_lengths", input_lengths, np.uint32),
            ("request_output_len", request_output_len, np.uint32),
        ):
            if array.dtype != want:
                raise ValueError(f"{name} arrived as {array.dtype}, FT expects {np.dtype(want)}")
        batch = input_ids.shape[0]
        if input_ids.ndim != 2 or input_lengths.shape != (batch,) or request_output_len.shape[0] != batch:
            raise ValueError(
                f"unexpected shapes: input_ids {input_ids.shape}, input_lengths {input_lengths.shape}, "
                f"request_output_len {request_output_len.shape}"
            )
        optionals = {name: self._optional(request, name) for name in SCALAR_OPTIONALS + ("end_id",)}
        for name, array in optionals.items():
            if array is not None and array.shape != (batch,):
                raise ValueError(f"{name} has shape {array.shape}, expected ({batch},) after reshape []")
        bad_words = self._optional(request, "bad_words_list")
        stop_words = self._optional(request, "stop_words_list")
        for name, array in (("bad_words_list", bad_words), ("stop_words_list", stop_words)):
            if array is not None and (array.dtype != np.int32 or array.ndim != 3 or array.shape[:2] != (batch, 2)):
                raise ValueError(f"{name} must be INT32 [batch, 2, N], got {array.dtype} {array.shape}")

        received = ", ".join(
            f"{name}={array.tolist()}" for name, array in optionals.items() if array is not None
        )
        if bad_words is not None:
            received += f", bad_words_list={bad_words.tolist()}"
        if stop_words is not None:
            received += f", stop_words_list={stop_words.tolist()}"
        pb_utils.Logger.log_info(f"{self.name} stand-in request: batch={batch} {received}".rstrip())

        rows: list[list[list[int]]] = []
        prompt_lengths: list[int] = []
        end_ids = optionals["end_id"]
        seeds = optionals["random_seed"]
        beam_widths = optionals["beam_width"]
        # FT takes one beam width and one log-probs flag per batch, from the first item.
        beams = 1 if beam_widths is None else int(beam_widths[0])
        if beams < 1:
            raise ValueError(f"beam_width must be >= 1, got {beams}")
        flags = optionals["is_return_log_probs"]
        if flags is not None and flags.dtype != np.bool_:
            raise ValueError(f"is_return_log_probs arrived as {flags.dtype}, FT expects bool")
        for i in range(batch):
            length = int(input_lengths[i])
            if length < 1 or length > input_ids.shape[1]:
                raise ValueError(f"input_lengths[{i}]={length} outside 1..{input_ids.shape[1]}")
            prompt = [int(t) for t in input_ids[i, :length]]
            end_id = None if end_ids is None else int(end_ids[i])
            shift = 0 if seeds is None else int(seeds[i]) % length
            item = []
            for b in range(beams):
                generated = generate(
                    prompt,
                    batch_output_len,
                    end_id,
                    (shift + b) % length,
                    [] if stop_words is None else split_words(stop_words[i]),
                    [] if bad_words is None else split_words(bad_words[i]),
                )
                item.append(prompt + generated)
            rows.append(item)
            prompt_lengths.append(length)
        return Generation(
            rows=rows,
            prompt_lengths=prompt_lengths,
            width=max(int(input_ids.shape[1]) + batch_output_len, max(len(r) for item in rows for r in item)),
            pads=[0 if end_ids is None else int(end_ids[i]) for i in range(batch)],
            output_len=batch_output_len,
            log_probs=flags is not None and bool(flags[0]),
        )

    def _error(self, error: ValueError) -> Any:
        return pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(f"{self.name}: {error}"))

    def execute(self, requests: list[Any]) -> list[Any] | None:
        self._hold()
        error_every, first_delay, step_seconds = self._faults()
        lengths = [self._optional(r, "request_output_len") for r in requests]
        batch_output_len = max((int(a.max()) for a in lengths if a is not None and a.size > 0), default=0)
        results: list[Generation | ValueError] = []
        for request in requests:
            self.received += 1
            if error_every > 0 and self.received % error_every == 0:
                results.append(ValueError(f"injected fault (every {error_every}th request fails)"))
                continue
            try:
                results.append(self._generate_one(request, batch_output_len))
            except ValueError as error:
                results.append(error)
        if first_delay > 0:
            time.sleep(first_delay)
        if not self.decoupled:
            return [self._error(r) if isinstance(r, ValueError) else r.response(None) for r in results]

        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        live: list[tuple[Any, Generation]] = []
        for request, result in zip(requests, results):
            sender = request.get_response_sender()
            if isinstance(result, ValueError):
                sender.send(self._error(result), flags=final)
            else:
                live.append((sender, result))
        # After every step, every request of the batch gets its output so far,
        # as FT's streaming callback sends it; then the complete one, FINAL.
        for step in range(1, max((g.steps() for _, g in live), default=0) + 1):
            if step_seconds > 0:
                time.sleep(step_seconds)
            for sender, generation in live:
                sender.send(generation.response(step))
        for sender, generation in live:
            sender.send(generation.response(None), flags=final)
        return None
