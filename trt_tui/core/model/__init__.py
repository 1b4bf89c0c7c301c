"""An ONNX model as trt-tui sees it without loading it: its info and digests (`modelinfo` over
`protobuf_wire`), the sample models, which files a user's paths name, the demo directory, and watching
directories for changed models. May import `core.files`; `watch` alone names the scheduler it feeds
(`core.execution`, for its type).
"""
