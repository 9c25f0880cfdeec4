"""vllm-sizer: size vLLM pods from their command line before they run out of memory."""

__version__ = "0.1.0"
