"""Output formats: how `trt-tui build`, `watch` and `run` (`--format`) and `trt_tui.observe`
(`display=`) show builds. Each is a `renderer.Renderer` with a `name`; `registry` finds them: the
built-in ones, every module of this package (a new format is one file here), and those an installed
package declares under the `trt_tui.formats` entry-point group.

May import `core`; nothing of the front ends (cli, ui) or the API. `headless` holds the built-in
formats (tty, lines, json).
"""
