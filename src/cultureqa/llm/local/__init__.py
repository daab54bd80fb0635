"""The embedded model on the CPU: GGUF conversion, pinned kernels, log-likelihood scoring.

Kept apart from the API clients so torch and transformers load only when a config asks for them.
"""
