"""Shared helpers for the triton-ft pre/post-processing Triton Python models.

Kept free of any Triton import so that every piece can be unit-tested with plain
pytest; the model.py files are the only place that touches
`triton_python_backend_utils`.
"""

from tritonft.errors import RequestError
from tritonft.params import PostprocessParams, PreprocessParams
from tritonft.tokenizer import TextTokenizer, TokenizerLoadError, load_tokenizer

__all__ = [
    "PostprocessParams",
    "PreprocessParams",
    "RequestError",
    "TextTokenizer",
    "TokenizerLoadError",
    "load_tokenizer",
]
