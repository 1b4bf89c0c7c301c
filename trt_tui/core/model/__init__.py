"""An ONNX model as trt-tui sees it without loading it: its info and digests (`modelinfo` over
`protobuf_wire`), the sample models, which files a user's paths name, the demo directory, and watching
directories for changed models (what a change means for builds is `core.execution.rebuild`'s). May
import `core.files` only.
"""
