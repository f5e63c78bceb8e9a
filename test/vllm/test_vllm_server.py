"""The project's vLLM model on a real CPU tritonserver, against Hugging Face transformers.

For each family, greedy generation through Triton (the gateway's inputs: top_k
1, temperature 1) must give exactly the tokens transformers' greedy
`generate` gives on the same checkpoint. CodeGen is served as the re-laid-out
GPT-J checkpoint and compared with the original CodeGen model, so the test
proves the weights path a CodeGen stack takes. The top alternatives vLLM
returns per token must be transformers' own top log probabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from client import generate
from conftest import FAMILIES
from tritonft.logprobs import token_pieces

PROMPT = "The quick brown fox jumps over"
MAX_TOKENS = 16


def reference_source(checkpoints: dict[str, Path], family: str) -> Path:
    # CodeGen's reference is the checkpoint before the re-layout.
    return checkpoints["codegen-source" if family == "codegen" else family]


def hf_greedy(directory: Path, prompt: str, max_tokens: int) -> tuple[list[int], list[torch.Tensor]]:
    """Greedy ids (cut at the end token, which the contract does not count) and each step's log-softmax."""
    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer.encode(prompt)])
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=max_tokens, do_sample=False, output_scores=True,
                             return_dict_in_generate=True, pad_token_id=tokenizer.eos_token_id)
    generated = out.sequences[0, ids.shape[1]:].tolist()
    if tokenizer.eos_token_id in generated:
        generated = generated[: generated.index(tokenizer.eos_token_id)]
    steps = [torch.log_softmax(score[0].float(), dim=-1) for score in out.scores[: len(generated)]]
    return generated, steps


def texts(array: Any) -> list[str]:
    return [bytes(v).decode() for v in array.reshape(-1)]


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_tokens_equal_transformers(server: dict[str, Any], checkpoints: dict[str, Path], family: str) -> None:
    expected, _ = hf_greedy(reference_source(checkpoints, family), PROMPT, MAX_TOKENS)
    tokenizer = AutoTokenizer.from_pretrained(checkpoints[family])
    result = generate(server["grpc"], family, PROMPT, MAX_TOKENS, top_k=1, temperature=1.0, return_tokens=1)
    assert result.error is None, result.error
    last = result.last
    count = int(last["output_token_count"][0, 0])
    pieces = texts(last["output_tokens"])[:count]
    # Token by token: the text each greedy token adds, and how many there are.
    assert pieces == token_pieces(lambda ids: tokenizer.decode(ids, skip_special_tokens=True), expected)
    assert count == len(expected)
    # vLLM's incremental detokenizer leaves out bytes that form no character
    # (a random model emits lone UTF-8 continuation bytes); a batch decode shows them as U+FFFD.
    assert texts(last["text_output"]) == [tokenizer.decode(expected, skip_special_tokens=True).replace("\ufffd", "")]
    assert int(last["input_token_count"][0, 0]) == len(tokenizer.encode(PROMPT))
    # Streamed: one response per generated token, each the whole text so far.
    assert len(result.responses) >= 2
    assert all(texts(last["text_output"])[0].startswith(texts(r["text_output"])[0]) for r in result.responses)


def test_greedy_differs_between_families(server: dict[str, Any]) -> None:
    """The comparison above means something only if the checkpoints do not all say the same."""
    outputs = {
        family: texts(generate(server["grpc"], family, PROMPT, MAX_TOKENS, top_k=1).last["text_output"])[0]
        for family in FAMILIES
    }
    assert len(set(outputs.values())) == len(FAMILIES), outputs


def test_top_logprobs_are_transformers_top_alternatives(server: dict[str, Any], checkpoints: dict[str, Path]) -> None:
    k = 3
    expected, steps = hf_greedy(checkpoints["gpt2"], PROMPT, 6)
    tokenizer = AutoTokenizer.from_pretrained(checkpoints["gpt2"])
    last = generate(server["grpc"], "gpt2", PROMPT, 6, top_k=1, top_logprobs=k).last
    count = int(last["output_token_count"][0, 0])
    assert count == len(expected)
    top_texts, top_probs = last["output_top_tokens"], last["output_top_log_probs"]
    assert top_texts.shape == (1, count, k) and top_probs.shape == (1, count, k)
    for j, step in enumerate(steps):
        values, ids = torch.topk(step, k)
        # A lone byte of a multi-byte character: vLLM's text for it is "", a decode shows U+FFFD.
        assert texts(top_texts[0, j]) == [tokenizer.decode([i]).replace("\ufffd", "") for i in ids.tolist()]
        assert top_probs[0, j].tolist() == pytest.approx(values.tolist(), abs=1e-3)
        # The sampled (greedy) token is the first alternative, with the same log probability.
        assert float(last["output_log_probs"][0, j]) == pytest.approx(float(values[0]), abs=1e-3)
    assert float(last["cum_log_probs"][0, 0]) == pytest.approx(float(last["output_log_probs"][0, :count].sum()), abs=1e-3)


def test_copies_with_seeds_in_one_request(server: dict[str, Any]) -> None:
    """OpenAI `n`: rows of one request, each its own generation; a seed makes a row reproducible."""
    first = generate(server["grpc"], "gptj", PROMPT, 8, rows=3, top_k=0, top_p=1.0, temperature=1.5, random_seed=7).last
    again = generate(server["grpc"], "gptj", PROMPT, 8, rows=1, top_k=0, top_p=1.0, temperature=1.5, random_seed=7).last
    assert first["text_output"].shape == (3, 1)
    assert texts(first["text_output"])[0] == texts(again["text_output"])[0]


def test_stop_word_ends_the_text_and_stays_in_it(server: dict[str, Any]) -> None:
    # A family whose random greedy text has characters to stop at (some emit only lone bytes).
    fulls = {f: texts(generate(server["grpc"], f, PROMPT, MAX_TOKENS, top_k=1).last["text_output"])[0] for f in FAMILIES}
    family, full = max(fulls.items(), key=lambda item: len(item[1].strip()))
    assert len(full.strip()) >= 6, fulls
    stop = full[len(full) // 2 : len(full) // 2 + 2]
    cut = texts(generate(server["grpc"], family, PROMPT, MAX_TOKENS, top_k=1, stop_words=[stop]).last["text_output"])[0]
    assert cut.endswith(stop) and full.startswith(cut) and len(cut) < len(full), (full, stop, cut)


@pytest.mark.parametrize(
    ("extra", "max_tokens", "message"),
    [
        ({}, 0, "max_tokens[0] is 0: must be between 1 and max_output_len=64"),
        ({"top_logprobs": 21}, 4, "top_logprobs[0] is 21: must be between 0 and max_logprobs=20"),
        ({"temperature": 0.0}, 4, "temperature[0] is 0.0"),
    ],
    ids=["max-tokens-zero", "too-many-alternatives", "temperature-zero"],
)
def test_bad_request_gets_its_own_error(server: dict[str, Any], extra: dict[str, Any], max_tokens: int, message: str) -> None:
    result = generate(server["grpc"], "gpt2", PROMPT, max_tokens, **extra)
    assert result.error is not None and message in result.error, result.error
    # The server keeps serving.
    assert generate(server["grpc"], "gpt2", PROMPT, 2, top_k=1).error is None


def test_prompt_over_max_input_len_is_context_length_error(server: dict[str, Any]) -> None:
    result = generate(server["grpc"], "gpt2", "word " * 200, 4)
    # The gateway maps this text to OpenAI's context_length_exceeded (tritonClient.ts).
    assert result.error is not None and "tokens, more than max_input_len=64" in result.error, result.error
