"""trt-tui for C++ programs: the header-only `trt_tui/monitor.h` (`include/`, with a CMake package
in `cmake/` for `find_package(trt_tui)`), and the preload library (`preload/`) through which
`trt-tui run` observes the builds of an unmodified C++ program, compiled on first use (`toolchain`).

Installing trt-tui needs no compiler; this package's Python imports nothing heavy.
"""
