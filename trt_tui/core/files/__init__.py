"""Files and the text around them: the one atomic writer, advisory file locks, sizes and durations
as people read them, text from outside made printable, and the rules every output path follows.
May import nothing of trt_tui except, for `output_paths` alone, `build` (the engine's sidecar name) and
`history` (the history's path, which no output may be).
"""
