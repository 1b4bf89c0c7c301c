from .entry import entry

entry()
