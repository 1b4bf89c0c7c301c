"""The core of trt-tui: everything a front end (the app, headless `build`, `run`, `serve`, the API)
drives, and nothing that draws. Packages are concepts, arrows point down: `files` < `model` < `build` <
`observe` < `cache` < `history` < `execution`. No module here imports Textual or `trt_tui.ui` (the
import-hygiene test walks every package to prove it).
"""
