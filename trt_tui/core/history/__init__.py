"""What past builds tell: the SQLite store of finished builds and its recorder, two builds
compared (diff), the `history` table, estimates (ETA, slow phases), the memory forecast, and the report
bundle. May import `core.files`, `core.model`, `core.build`, `core.cache` and `core.observe`; the
execution layer imports it, never the other way (the recorder reads events, not jobs).
"""
