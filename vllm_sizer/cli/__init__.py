"""Command-line entry points: `vllm-sizer estimate|check|run`."""
