"""What a batch of builds tells a CI system: a JUnit report, a GitHub step summary, a baseline the next
run compares its figures with, and whether a model builds the same engine twice.

Everything here reads a build through its events, folded by `core.build.tracker` (`results`), never
through a job; beside the headless renderers, over the core, under the command line.
"""
