"""Calibration harness: measure the vLLM CPU backend's peak memory (LoRA off/on).

Modules here must import without torch or vLLM; only the child process
(`calibration._child`) imports vLLM.
"""
