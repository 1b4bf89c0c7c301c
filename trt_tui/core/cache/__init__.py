"""The engine cache: whether an engine is current, a build's fingerprint (what it was made from),
the wording of why a build happens, and the digests remembered across processes. May import
`core.files`, `core.model`, `core.build` and `core.observe.nvml` (the GPU is part of a fingerprint).
"""
