"""Every build on the machine in one view: the per-user socket a running app listens on.

A running `trt-tui` app (and `trt-tui serve`) listens on a Unix socket in the user's runtime
directory (`place`); builds elsewhere report to it over the same transport as `trt-tui run`'s
programs (`inject.reporter` on their side, `inject.relays` on this one): a program using
`trt_tui.observe`, `trt-tui run` (`publisher`, which forwards the builds of a session), and any Python
process of an environment where `trt-tui hook install` put the import hook (`inject.env_hook`). The
listening side (`server`) makes each reported build a job of the app's scheduler, followed outside its
queue (`Scheduler.follow`).

`place` is imported by the hooked programs: it stays light (no imports of trt-tui's build code).
"""
