"""What past builds tell: the SQLite store of finished builds and its recorder, two builds
compared (diff), the `history` table, estimates (ETA, slow phases), the memory forecast, the report
bundle, and the rules every output path follows (`output_paths`: no output may be the history, an
input or another output). May import `core.files`, `core.model`, `core.build`, `core.cache` and
`core.observe`; the execution layer imports it, never the other way (the recorder reads events, not jobs).
"""
