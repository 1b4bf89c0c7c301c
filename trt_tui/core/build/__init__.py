"""The build itself: its spec and options (plain types), the TensorRT driver, the progress
monitor and logger, the events a build emits and their versioned JSON form, the phase tree, the event
buffer between TensorRT's threads and the renderers, the backend, the native log, the sidecar and the
engine file's placement, the per-build memory limit and the log store. May import `core.files` and
`core.model`; nothing above it (cache, history, execution, observe).
"""
