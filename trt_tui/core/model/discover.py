"""Which ONNX files a user's paths name: the files given, and every `.onnx` under the directories."""

from __future__ import annotations

from pathlib import Path


def find_models(paths: list[str]) -> tuple[list[Path], list[str]]:
    """ONNX files named or under the directories named; the second list holds one-line errors."""
    found, errors = [], []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.onnx") if p.is_file()))
        elif path.is_file():
            found.append(path)
        elif path.exists():
            errors.append(f"{path}: not a regular file")
        else:
            errors.append(f"{path}: no such file or directory")
    return list(dict.fromkeys(found)), errors
