"""Files and the text around them: the one atomic writer, advisory file locks, sizes and durations
as people read them, and text from outside made printable. May import nothing of trt_tui.
"""
