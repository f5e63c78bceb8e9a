"""Triton Python model `ensemble` on vLLM: the project's vLLM model repository.

The same model name and tensors as the FT repository's ensemble
(docs/architecture.md "Ensemble contract"), so the gateway serves an FT model
and a vLLM model alike; plus what FT cannot: `top_logprobs` alternatives per
token (outputs `output_top_tokens`, `output_top_log_probs`). Written for this
project (docs/vllm.md); it drives vLLM's async engine directly.

- Every engine setting comes from config.pbtxt parameters (tritonvllm.settings):
  tensor parallel, GPU memory fraction, max model length, KV-cache size, the
  request limits. The weights and tokenizer load from `model_path`, offline.
- Decoupled: each row of a request is one vLLM generation; whenever a row
  advances, one response carries every row's generation so far (cumulative
  text, as FT's streaming ensemble sends), and the request ends with an empty
  FINAL response.
- execute() only hands requests to an asyncio loop on a thread of its own and
  returns, so one model instance keeps many requests in flight and vLLM
  batches them (continuous batching).
- A request Triton reports cancelled (the gateway ends the stream at a stop
  sequence, or the client went away) is aborted in vLLM: its KV cache is
  freed at once.
- vLLM's engine metrics (requests running and waiting, KV-cache usage, time
  to first token, tokens) are Triton custom metrics under vLLM's own names, on
  Triton's metrics port (tritonvllm.metrics).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import locale
import os
import sys
import threading
import uuid
from typing import Any

import triton_python_backend_utils as pb_utils

_SHARED = os.environ.get("TRITONFT_PYTHON", "/opt/triton-ft/python")
if os.path.isdir(_SHARED) and _SHARED not in sys.path:
    sys.path.append(_SHARED)

from tritonft.errors import ModelConfigError, RequestError, request_error
from tritonvllm.metrics import COUNTER, GAUGE, HISTOGRAM, Reporter, default_buckets
from tritonvllm.requests import Generation, parse
from tritonvllm.responses import RowState, outputs
from tritonvllm.settings import EngineSettings

INPUTS = (
    "text_input", "max_tokens", "bad_words", "stop_words", "top_k", "top_p", "temperature", "repetition_penalty",
    "random_seed", "presence_penalty", "return_tokens", "top_logprobs",
)


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise ModelConfigError("the vLLM ensemble must be decoupled (model_transaction_policy)")
        self.settings = EngineSettings.from_model_config(config)
        self.model_name = args["model_name"]
        self.reporters: list[Reporter] = []
        # vLLM reads these when it is imported or when the engine starts.
        os.environ.update(self.settings.environment())
        # The backend's embedded interpreter keeps the C locale whatever the
        # environment says, so open() defaults to ASCII; torch reads its UTF-8
        # kernel templates with that default and fails to import.
        if locale.getpreferredencoding(False).lower().replace("-", "") != "utf8":
            locale.setlocale(locale.LC_CTYPE, "C.UTF-8")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="vllm-loop", daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result()

    async def _start(self) -> None:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.engine = AsyncLLM.from_engine_args(
            AsyncEngineArgs(**self.settings.engine_args()), stat_loggers=[self._stat_logger_factory()]
        )
        tokenizer = self.engine.get_tokenizer()
        # A coroutine in some vLLM releases, the tokenizer itself in others.
        self.tokenizer = await tokenizer if inspect.isawaitable(tokenizer) else tokenizer
        self.vocab_size = len(self.tokenizer)
        self.eos_id = self.tokenizer.eos_token_id
        self.tasks: set[asyncio.Future[None]] = set()

    def execute(self, requests: list[Any]) -> None:
        for request in requests:
            # Read the inputs here, on the backend's thread: the request's
            # tensors live in shared memory the stub reuses once execute returns.
            inputs = {}
            for name in INPUTS:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                inputs[name] = None if tensor is None else tensor.as_numpy().copy()
            future = asyncio.run_coroutine_threadsafe(self._serve(request, inputs), self.loop)
            self.tasks.add(future)
            future.add_done_callback(self.tasks.discard)
        return None

    def finalize(self) -> None:
        for future in list(self.tasks):
            future.cancel()
        self.engine.shutdown()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        for reporter in self.reporters:
            reporter.close()

    def _stat_logger_factory(self) -> Any:
        """vLLM's per-engine stat logger factory: each engine's statistics to a Reporter."""
        from vllm.v1.metrics.loggers import StatLoggerBase

        try:  # vLLM's own bucket table; a release without it has the same bounds (tritonvllm.metrics).
            from vllm.v1.metrics.buckets import histogram_buckets
        except ImportError:
            histogram_buckets = default_buckets

        kinds = {
            COUNTER: pb_utils.MetricFamily.COUNTER,
            GAUGE: pb_utils.MetricFamily.GAUGE,
            HISTOGRAM: pb_utils.MetricFamily.HISTOGRAM,
        }
        reporters = self.reporters
        model_name = self.model_name

        class TritonStatLogger(StatLoggerBase):
            def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
                # vLLM's own labels: the served model's name and the engine's index.
                labels = {"model_name": model_name, "engine": str(engine_index)}
                self.reporter = Reporter(pb_utils.MetricFamily, kinds, labels, histogram_buckets)
                reporters.append(self.reporter)

            def record(self, scheduler_stats: Any, iteration_stats: Any, mm_cache_stats: Any = None, engine_idx: int = 0) -> None:
                self.reporter.record(scheduler_stats, iteration_stats)

            def log_engine_initialized(self) -> None:
                pass

        return TritonStatLogger

    def _decode(self, ids: Any) -> str:
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=True))

    async def _serve(self, request: Any, inputs: dict[str, Any]) -> None:
        sender = request.get_response_sender()
        try:
            rows = parse(
                inputs,
                lambda text: self.tokenizer.encode(text),
                vocab_size=self.vocab_size,
                max_input_len=self.settings.max_input_len,
                max_output_len=self.settings.max_output_len,
                max_prompt_bytes=self.settings.max_prompt_bytes,
                max_logprobs=self.settings.max_logprobs,
            )
            await self._generate(request, sender, rows)
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        except RequestError as err:
            sender.send(
                pb_utils.InferenceResponse(output_tensors=[], error=request_error(pb_utils, str(err))),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )
        except Exception as err:  # a bug or an engine error fails this request only
            print(f"ensemble (vLLM): {type(err).__name__}: {err}", file=sys.stderr)
            sender.send(
                pb_utils.InferenceResponse(
                    output_tensors=[], error=pb_utils.TritonError(f"vLLM failed: {type(err).__name__}: {err}")
                ),
                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
            )

    def _params(self, row: Generation) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        return SamplingParams(
            n=1,
            max_tokens=row.max_tokens,
            stop=row.stop or None,
            # The contract keeps a stop word in the returned text (FT does).
            include_stop_str_in_output=True,
            bad_words=row.bad_words or None,
            # 0: only the sampled token's log probability (cum_log_probs, output_log_probs).
            logprobs=row.top_logprobs,
            output_kind=RequestOutputKind.CUMULATIVE,
            skip_special_tokens=True,
            **row.sampling,
        )

    async def _generate(self, request: Any, sender: Any, rows: list[Generation]) -> None:
        from vllm.inputs import TokensPrompt

        base = uuid.uuid4().hex
        ids = [f"{base}-{i}" for i in range(len(rows))]
        state = [RowState(prompt_tokens=len(row.prompt_ids)) for row in rows]
        updates: asyncio.Queue[tuple[int, Any]] = asyncio.Queue()

        async def run(i: int) -> None:
            async for out in self.engine.generate(TokensPrompt(prompt_token_ids=rows[i].prompt_ids), self._params(rows[i]), ids[i]):
                await updates.put((i, out))

        tasks = [asyncio.ensure_future(run(i)) for i in range(len(rows))]
        done = asyncio.ensure_future(asyncio.gather(*tasks))
        k = max(row.top_logprobs for row in rows)
        wants_tokens = [row.return_tokens for row in rows]
        try:
            while not (done.done() and updates.empty()):
                getter = asyncio.ensure_future(updates.get())
                await asyncio.wait({getter, done}, return_when=asyncio.FIRST_COMPLETED)
                if not getter.done():
                    getter.cancel()
                    break
                batch = [getter.result()]
                while not updates.empty():
                    batch.append(updates.get_nowait())
                for i, out in batch:
                    self._update(state[i], out, rows[i].top_logprobs)
                if _cancelled(request):
                    for request_id in ids:
                        await self.engine.abort(request_id)
                    return
                tensors = outputs(state, self._decode, wants_tokens, k)
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(n, a) for n, a in tensors.items()]))
            await done  # re-raise an engine error
        finally:
            for task in tasks:
                task.cancel()

    def _update(self, row: RowState, out: Any, k: int) -> None:
        completion = out.outputs[0]
        token_ids = list(completion.token_ids)
        logprobs = list(completion.logprobs or [])
        # vLLM counts the end token it stopped at; the contract's (FT's) counts do not.
        if out.finished and token_ids and token_ids[-1] == self.eos_id and completion.finish_reason == "stop":
            token_ids, logprobs = token_ids[:-1], logprobs[:-1]
        row.text = completion.text
        row.token_ids = token_ids
        row.log_probs = [float(step[token].logprob) for token, step in zip(token_ids, logprobs, strict=False)]
        if k > 0:
            row.alternatives = [
                [(str(p.decoded_token or ""), float(p.logprob)) for p in sorted(step.values(), key=lambda p: p.rank)[:k]]
                for step in logprobs
            ]
        row.finished = out.finished


def _cancelled(request: Any) -> bool:
    check = getattr(request, "is_cancelled", None)
    return bool(check()) if callable(check) else False
