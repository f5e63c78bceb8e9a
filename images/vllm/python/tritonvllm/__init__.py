"""Helpers of the project's vLLM model for Triton (images/vllm/model_repository/ensemble).

Free of any Triton or vLLM import, so every piece is tested with plain pytest;
model.py is the only place that touches `triton_python_backend_utils` and
vLLM. Request checks and token texts are shared with the FT models (tritonft).
"""
