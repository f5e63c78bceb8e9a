"""The preprocessing/postprocessing model.py files, executed with a real tokenizer.

Triton itself is replaced by the stand-in in stubs/; everything else (tokenizer
files, tokenizers/transformers, numpy) is real.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import triton_python_backend_utils as pb_utils

from conftest import make_model, postprocessing_config, preprocessing_config
from tritonft.errors import ModelConfigError
from tritonft.tokenizer import TokenizerLoadError, load_tokenizer

MAX_INPUT = 32
MAX_OUTPUT = 16


def strings(values: list[Any]) -> np.ndarray:
    """A [batch, n] TYPE_STRING tensor the way Triton delivers it: object array of bytes, ragged rows padded with b""."""
    rows = [[v.encode("utf-8") if isinstance(v, str) else v for v in row] for row in values]
    out = np.full((len(rows), max(len(r) for r in rows)), b"", dtype=np.object_)
    for i, row in enumerate(rows):
        for j, v in enumerate(row):
            out[i, j] = v
    return out


def pre_request(prompts: list[Any], max_tokens: list[int], bad: list[list[str]] | None = None, stop: list[list[str]] | None = None) -> pb_utils.InferenceRequest:
    inputs = [
        pb_utils.Tensor("text_input", strings([[p] for p in prompts])),
        pb_utils.Tensor("max_tokens", np.array(max_tokens, dtype=np.uint32).reshape(-1, 1)),
    ]
    if bad is not None:
        inputs.append(pb_utils.Tensor("bad_words", strings(bad)))
    if stop is not None:
        inputs.append(pb_utils.Tensor("stop_words", strings(stop)))
    return pb_utils.InferenceRequest(inputs=inputs, request_id="", correlation_id=0, requested_output_names=[])


def outputs(response: pb_utils.InferenceResponse) -> dict[str, np.ndarray]:
    assert not response.has_error(), response.error().message()
    return {t.name(): t.as_numpy() for t in response.output_tensors()}


@pytest.fixture(scope="module")
def pre(tokenizer_info: dict[str, Any]) -> Any:
    return make_model("preprocessing", preprocessing_config(tokenizer_info, MAX_INPUT, MAX_OUTPUT))


@pytest.fixture(scope="module")
def post(tokenizer_info: dict[str, Any]) -> Any:
    return make_model("postprocessing", postprocessing_config(tokenizer_info))


@pytest.fixture(scope="module")
def tok(tokenizer_info: dict[str, Any]) -> Any:
    return load_tokenizer(tokenizer_info["path"])


def fake_ft(pre_out: dict[str, np.ndarray], generated: list[list[int]], end_id: int, pad_id: int, beams: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """FT-shaped outputs: [batch, beam, tokens] with the prompt, generation, end_id and padding."""
    ids, lengths = pre_out["input_ids"], pre_out["input_lengths"].reshape(-1)
    batch = ids.shape[0]
    rows = []
    seq = np.zeros((batch, beams), dtype=np.uint32)
    for i in range(batch):
        prompt = list(ids[i, : lengths[i]])
        for b in range(beams):
            gen = generated[i] if b == 0 else list(reversed(generated[i]))
            rows.append((i, b, prompt + gen + [end_id]))
            seq[i, b] = len(prompt) + len(gen) + 1
    width = max(len(r) for _, _, r in rows) + 3
    out = np.full((batch, beams, width), pad_id, dtype=np.uint32)
    for i, b, row in rows:
        out[i, b, : len(row)] = row
    return out, seq


def post_request(
    output_ids: np.ndarray, seq: np.ndarray, input_lengths: np.ndarray, request_output_len: np.ndarray | None = None
) -> pb_utils.InferenceRequest:
    inputs = [
        pb_utils.Tensor("output_ids", output_ids),
        pb_utils.Tensor("sequence_length", seq),
        pb_utils.Tensor("input_lengths", input_lengths.reshape(-1, 1).astype(np.uint32)),
    ]
    if request_output_len is not None:
        inputs.append(pb_utils.Tensor("request_output_len", request_output_len.reshape(-1, 1).astype(np.uint32)))
    return pb_utils.InferenceRequest(inputs=inputs)


def test_generation_is_capped_at_the_requests_own_output_len(
    pre: Any, post: Any, tok: Any, tokenizer_info: dict[str, Any]
) -> None:
    # Dynamic batching can merge a max_tokens=2 request with a longer one; FT then
    # generates the longer length for both. Each text must stop at its own limit.
    out = outputs(pre.execute([pre_request(["hello world"], [2])])[0])
    assert out["request_output_len"].reshape(-1).tolist() == [2]
    gen = tok.encode(" one two three four", add_special_tokens=False)
    assert len(gen) > 2
    output_ids, seq = fake_ft(out, [gen], tokenizer_info["end_id"], tokenizer_info["pad_id"])
    result = outputs(post.execute([post_request(output_ids, seq, out["input_lengths"], out["request_output_len"])])[0])
    assert int(result["output_token_count"][0, 0]) == 2
    assert result["text_output"][0, 0].decode("utf-8") == tok.decode(gen[:2])


# --- round trip and batching -------------------------------------------------


def test_round_trip_prompt_and_generation(pre: Any, post: Any, tok: Any, tokenizer_info: dict[str, Any]) -> None:
    prompt = "def greet(name: str) -> str:\n    return f\"Hello, {name}!\" café 🙂"
    out = outputs(pre.execute([pre_request([prompt], [8])])[0])
    n = int(out["input_lengths"][0, 0])
    assert tok.decode(out["input_ids"][0, :n]) == prompt

    continuation = "\nprint(greet(\"wörld\"))"
    gen = tok.encode(continuation, add_special_tokens=False)
    output_ids, seq = fake_ft(out, [gen], tokenizer_info["end_id"], tokenizer_info["pad_id"])
    result = outputs(post.execute([post_request(output_ids, seq, out["input_lengths"])])[0])
    assert result["text_output"].shape == (1, 1)
    assert result["text_output"][0, 0].decode("utf-8") == continuation
    assert int(result["input_token_count"][0, 0]) == n
    assert int(result["output_token_count"][0, 0]) == len(gen)
    assert result["input_token_count"].dtype == np.uint32


def test_batch_of_unequal_prompts_is_padded_with_true_lengths(pre: Any, tok: Any, tokenizer_info: dict[str, Any]) -> None:
    prompts = ["Hi", "The quick brown fox jumps over the lazy dog", "for i in range(10):"]
    out = outputs(pre.execute([pre_request(prompts, [3, 16, 1])])[0])
    encoded = [tok.encode(p) for p in prompts]
    width = max(len(e) for e in encoded)
    assert len({len(e) for e in encoded}) == 3, "test needs prompts of different lengths"

    assert out["input_ids"].shape == (3, width)
    assert out["input_ids"].dtype == np.uint32
    assert out["input_lengths"].shape == (3, 1)
    assert out["input_lengths"].reshape(-1).tolist() == [len(e) for e in encoded]
    for i, ids in enumerate(encoded):
        assert out["input_ids"][i, : len(ids)].tolist() == ids
        assert out["input_ids"][i, len(ids):].tolist() == [tokenizer_info["pad_id"]] * (width - len(ids))
    assert out["request_output_len"].reshape(-1).tolist() == [3, 16, 1]
    assert out["request_output_len"].dtype == np.uint32
    assert out["start_id"].reshape(-1).tolist() == [tokenizer_info["start_id"]] * 3
    assert out["end_id"].reshape(-1).tolist() == [tokenizer_info["end_id"]] * 3


def test_several_requests_in_one_execute_are_independent(pre: Any, tok: Any) -> None:
    responses = pre.execute([pre_request(["Hello world"], [4]), pre_request(["One, two, three. Red, green"], [5])])
    assert len(responses) == 2
    first, second = outputs(responses[0]), outputs(responses[1])
    assert first["input_ids"][0].tolist() == tok.encode("Hello world")
    assert second["input_ids"][0].tolist() == tok.encode("One, two, three. Red, green")


# --- word lists ----------------------------------------------------------------


def test_no_words_gives_the_empty_word_list(pre: Any) -> None:
    out = outputs(pre.execute([pre_request(["Hello", "world, hello there"], [2, 2])])[0])
    for name in ("bad_words_list", "stop_words_list"):
        assert out[name].dtype == np.int32
        assert out[name].shape == (2, 2, 1)
        assert out[name][0].tolist() == [[0], [-1]]
        assert out[name][1].tolist() == [[0], [-1]]


def test_stop_and_bad_words_are_encoded_with_offsets(pre: Any, tok: Any) -> None:
    stop = [["\n\n", " return"], ["", "print"]]
    bad = [[" fox"], ["Hello", " world!"]]
    out = outputs(pre.execute([pre_request(["def add(a, b):", "Hello"], [4, 4], bad=bad, stop=stop)])[0])

    def expected(words: list[str]) -> tuple[list[int], list[int]]:
        ids: list[int] = []
        offsets: list[int] = []
        for w in words:
            if w:
                ids += tok.encode(w, add_special_tokens=False)
                offsets.append(len(ids))
        return ids, offsets

    for name, words in (("stop_words_list", stop), ("bad_words_list", bad)):
        tensor = out[name]
        assert tensor.dtype == np.int32
        per_item = [expected(w) for w in words]
        width = max(max(len(ids), len(offs)) for ids, offs in per_item)
        assert tensor.shape == (2, 2, width)
        for i, (ids, offs) in enumerate(per_item):
            assert tensor[i, 0].tolist() == ids + [0] * (width - len(ids))
            assert tensor[i, 1].tolist() == offs + [-1] * (width - len(offs))
    # The empty string in stop_words[1] is padding, not a word.
    assert (out["stop_words_list"][1, 1] >= 0).sum() == 1


def test_only_stop_words_given_keeps_empty_bad_words(pre: Any, tok: Any) -> None:
    out = outputs(pre.execute([pre_request(["Hello"], [4], stop=[[" world"]])])[0])
    assert out["bad_words_list"].tolist() == [[[0], [-1]]]
    ids = tok.encode(" world", add_special_tokens=False)
    assert out["stop_words_list"][0, 0].tolist() == ids
    assert out["stop_words_list"][0, 1].tolist() == [len(ids)] + [-1] * (len(ids) - 1)


# --- bad requests ----------------------------------------------------------------


BAD_REQUESTS = [
    ("empty prompt", lambda: pre_request([""], [4]), ["text_input[0]", "empty"]),
    ("max_tokens zero", lambda: pre_request(["Hello"], [0]), ["max_tokens[0]", "0", f"max_output_len={MAX_OUTPUT}"]),
    ("max_tokens too large", lambda: pre_request(["Hello"], [MAX_OUTPUT + 1]), ["max_tokens[0]", str(MAX_OUTPUT + 1), f"max_output_len={MAX_OUTPUT}"]),
    ("prompt too long", lambda: pre_request(["The quick brown fox jumps over the lazy dog. " * 8], [4]), ["text_input[0]", "tokens", f"max_input_len={MAX_INPUT}"]),
    ("invalid UTF-8 prompt", lambda: pre_request([b"caf\xc3\x28 bad"], [4]), ["text_input[0]", "UTF-8"]),
    ("invalid UTF-8 stop word", lambda: pre_request(["Hello"], [4], stop=[[b"\xff\xfe"]]), ["stop_words[0][0]", "UTF-8"]),
    ("invalid UTF-8 bad word", lambda: pre_request(["Hello"], [4], bad=[[b"ok", b"\x80"]]), ["bad_words[0][1]", "UTF-8"]),
    ("bad item in a batch", lambda: pre_request(["Hello", ""], [4, 4]), ["text_input[1]", "empty"]),
]


@pytest.mark.parametrize("label,make,fragments", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_request_fails_alone_and_others_are_served(pre: Any, tok: Any, label: str, make: Any, fragments: list[str]) -> None:
    good = pre_request(["Hello world"], [4])
    responses = pre.execute([good, make(), pre_request(["One, two"], [2])])
    assert len(responses) == 3
    assert responses[1].has_error(), f"{label} was accepted"
    message = responses[1].error().message()
    assert responses[1].error().code() == pb_utils.TritonError.INVALID_ARG, "a refused request is a client error"
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert responses[1].output_tensors() == []
    assert outputs(responses[0])["input_ids"][0].tolist() == tok.encode("Hello world")
    assert outputs(responses[2])["input_ids"][0].tolist() == tok.encode("One, two")


def test_prompt_exactly_at_max_input_len_is_accepted(pre: Any, tok: Any) -> None:
    words = "one two three four five six seven eight nine ten " * 10
    ids = tok.encode(words)[:MAX_INPUT]
    prompt = tok.decode(ids)
    assert len(tok.encode(prompt)) == MAX_INPUT
    out = outputs(pre.execute([pre_request([prompt], [MAX_OUTPUT])])[0])
    assert int(out["input_lengths"][0, 0]) == MAX_INPUT


# --- postprocessing stripping ------------------------------------------------------


def test_postprocessing_strips_prompt_padding_end_and_other_beams(post: Any, tok: Any, tokenizer_info: dict[str, Any]) -> None:
    end, pad = tokenizer_info["end_id"], tokenizer_info["pad_id"]
    prompts = [tok.encode("Hello world"), tok.encode("The quick brown fox jumps")]
    gens = [tok.encode(" and more", add_special_tokens=False), tok.encode(" over the lazy dog.", add_special_tokens=False)]
    width = max(len(p) for p in prompts) + max(len(g) for g in gens) + 4
    output_ids = np.full((2, 2, width), pad, dtype=np.uint32)
    seq = np.zeros((2, 2), dtype=np.uint32)
    for i, (p, g) in enumerate(zip(prompts, gens, strict=True)):
        output_ids[i, 0, : len(p) + len(g)] = p + g
        # FT keeps end_id after a finished sequence; sequence_length may include it.
        output_ids[i, 0, len(p) + len(g)] = end
        seq[i, 0] = len(p) + len(g) + 1
        output_ids[i, 1, : len(p) + 1] = [*p, tok.encode("X", add_special_tokens=False)[0]]
        seq[i, 1] = len(p) + 1
    lengths = np.array([len(p) for p in prompts])
    result = outputs(post.execute([post_request(output_ids, seq, lengths)])[0])
    assert [t.decode() for t in result["text_output"].reshape(-1)] == [" and more", " over the lazy dog."]
    assert result["input_token_count"].reshape(-1).tolist() == lengths.tolist()
    assert result["output_token_count"].reshape(-1).tolist() == [len(g) for g in gens]


def test_postprocessing_strips_trailing_pad_inside_sequence_length(post: Any, tok: Any, tokenizer_info: dict[str, Any]) -> None:
    pad = tokenizer_info["pad_id"]
    prompt = tok.encode("Hello")
    gen = tok.encode(" there", add_special_tokens=False)
    row = prompt + gen + [pad, pad]
    output_ids = np.array([[row]], dtype=np.uint32)
    seq = np.array([[len(row)]], dtype=np.uint32)
    result = outputs(post.execute([post_request(output_ids, seq, np.array([len(prompt)]))])[0])
    assert result["text_output"][0, 0] == b" there"
    assert int(result["output_token_count"][0, 0]) == len(gen)


def test_postprocessing_nothing_generated(post: Any, tok: Any, tokenizer_info: dict[str, Any]) -> None:
    prompt = tok.encode("Hello")
    output_ids = np.array([[[*prompt, tokenizer_info["end_id"]]]], dtype=np.uint32)
    seq = np.array([[len(prompt) + 1]], dtype=np.uint32)
    result = outputs(post.execute([post_request(output_ids, seq, np.array([len(prompt)]))])[0])
    assert result["text_output"][0, 0] == b""
    assert int(result["output_token_count"][0, 0]) == 0


def test_postprocessing_inconsistent_lengths_fail_only_that_request(post: Any, tok: Any) -> None:
    prompt = tok.encode("Hello world")
    ok_ids = np.array([[prompt + tok.encode("!", add_special_tokens=False)]], dtype=np.uint32)
    good = post_request(ok_ids, np.array([[len(prompt) + 1]], dtype=np.uint32), np.array([len(prompt)]))
    bad = post_request(ok_ids, np.array([[1]], dtype=np.uint32), np.array([len(prompt)]))
    responses = post.execute([bad, good])
    assert responses[0].has_error()
    assert "sequence_length" in responses[0].error().message()
    assert outputs(responses[1])["text_output"][0, 0] == b"!"


# --- initialisation ----------------------------------------------------------------


def test_missing_parameter_fails_model_load(tokenizer_info: dict[str, Any]) -> None:
    config = preprocessing_config(tokenizer_info)
    del config["parameters"]["pad_id"]
    with pytest.raises(ModelConfigError, match="pad_id"):
        make_model("preprocessing", config)


def test_relative_tokenizer_path_fails_model_load(tokenizer_info: dict[str, Any]) -> None:
    config = postprocessing_config(tokenizer_info)
    config["parameters"]["tokenizer_path"] = {"string_value": "postprocessing/tokenizer"}
    with pytest.raises(ModelConfigError, match="absolute"):
        make_model("postprocessing", config)


def test_missing_tokenizer_dir_fails_without_reaching_the_hub(tmp_path: Any) -> None:
    with pytest.raises(TokenizerLoadError, match="does not exist"):
        load_tokenizer(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokenizerLoadError, match=r"tokenizer\.json"):
        load_tokenizer(str(tmp_path / "empty"))


def test_dir_with_only_tokenizer_json_loads_through_tokenizers(raw_tokenizer_info: dict[str, Any]) -> None:
    tok = load_tokenizer(raw_tokenizer_info["path"])
    assert tok.backend == "tokenizers"
    model = make_model("preprocessing", preprocessing_config(raw_tokenizer_info))
    out = outputs(model.execute([pre_request(["Hello world"], [2])])[0])
    assert out["input_ids"][0].tolist() == tok.encode("Hello world")


def test_full_tokenizer_dir_loads_through_transformers(tokenizer_info: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert load_tokenizer(tokenizer_info["path"]).backend == "transformers"
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_output_dtypes_follow_the_model_config(tokenizer_info: dict[str, Any]) -> None:
    config = preprocessing_config(tokenizer_info)
    for entry in config["output"]:
        if entry["name"] == "input_lengths":
            entry["data_type"] = "TYPE_INT32"
    model = make_model("preprocessing", config)
    out = outputs(model.execute([pre_request(["Hello"], [2])])[0])
    assert out["input_lengths"].dtype == np.int32


@pytest.mark.parametrize("model", ["preprocessing", "postprocessing"])
def test_an_output_missing_from_the_config_fails_model_load(model: str, tokenizer_info: dict[str, Any]) -> None:
    config = (preprocessing_config if model == "preprocessing" else postprocessing_config)(tokenizer_info)
    dropped = config["output"].pop(0)["name"]
    with pytest.raises(ModelConfigError, match=f"{model} config.pbtxt has no output '{dropped}'"):
        make_model(model, config)


# --- log probabilities (OpenAI logprobs) ----------------------------------------------


def test_postprocessing_returns_ft_log_probs_and_token_texts(post: Any, tok: Any) -> None:
    prompt = tok.encode("Hello")
    gen = tok.encode(" there, friend", add_special_tokens=False)
    row = prompt + gen
    output_ids = np.array([[row]], dtype=np.uint32)
    seq = np.array([[len(row)]], dtype=np.uint32)
    # FT's output_log_probs: [batch, beam, steps], step j = generated token j; two extra steps past the end.
    steps = np.array([[[-0.5 * (j + 1) for j in range(len(gen) + 2)]]], dtype=np.float32)
    request = post_request(output_ids, seq, np.array([len(prompt)]))
    request.inputs().append(pb_utils.Tensor("output_log_probs", steps))
    request.inputs().append(pb_utils.Tensor("return_tokens", np.array([[1]], dtype=np.uint32)))
    result = outputs(post.execute([request])[0])
    expected = [-0.5 * (j + 1) for j in range(len(gen))]
    assert result["output_log_probs"].reshape(-1).tolist() == expected
    assert float(result["cum_log_probs"][0, 0]) == pytest.approx(sum(expected))
    pieces = [t.decode() for t in result["output_tokens"].reshape(-1)]
    assert len(pieces) == len(gen) and "".join(pieces) == " there, friend"


def test_token_pieces_hold_a_split_character_until_it_completes() -> None:
    from tritonft.logprobs import token_pieces

    # A byte-level decoder: each "token" is one byte of UTF-8.
    def decode(ids: Any) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    data = list("aé!".encode())
    assert token_pieces(decode, data) == ["a", "", "é", "!"]
