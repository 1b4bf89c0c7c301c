"""Where and when builds run: the scheduler (one protocol, also implemented by serve's
client), the session that assembles it with its settings, the job, the executors (one base class;
thread, process with its warm spare, child and malloc set-up, Ray caller and host), the memory guard,
the follower of a build that runs elsewhere, and the rebuilds a changed model asks for. May import every other `core` package; only
`trt_tui.run`, `trt_tui.serve` and the front ends import it.
"""
