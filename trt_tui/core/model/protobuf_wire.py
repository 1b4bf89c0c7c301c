"""The protobuf wire format, read from a file without loading it: what `modelinfo` walks an ONNX model with.

A message's fields are yielded as (field, wire type, value or payload span); payloads are stepped over by
their length without being read, so a model's weights cost nothing unless they are digested. The file is
read with ordinary positioned reads through a one-block cache rather than mmap: a file rewritten in place
while it is read shows up as a short read (`Malformed`), where a truncated mmap would kill the process
with SIGBUS. Imports nothing of trt-tui.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

__all__ = ["EGROUP", "I32", "I64", "LEN", "SGROUP", "VARINT", "Malformed", "Source", "WireReader", "varint_in"]

# Wire types.
VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


class Malformed(Exception):
    """Raised inside the reader; the caller turns it into its own error naming the file."""


class Source:
    """Positioned reads of a file through a one-block cache; a short read means the file shrank."""

    BLOCK = 8192

    def __init__(self, f, size: int) -> None:
        self._f = f
        self.size = size
        self._base = 0
        self._buf = b""

    def _read_at(self, pos: int, length: int) -> bytes:
        self._f.seek(pos)
        chunks = []
        left = length
        while left > 0:
            chunk = self._f.read(left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def window(self, pos: int, n: int) -> tuple[bytes, int]:
        """A buffer and an offset into it holding the bytes from ``pos`` on, at least ``n`` of them
        (fewer only where the file ends)."""
        base = self._base
        if base <= pos and pos + n <= base + len(self._buf):
            return self._buf, pos - base
        want = min(n, self.size - pos)
        if base <= pos and pos + want <= base + len(self._buf):
            return self._buf, pos - base
        data = self._read_at(pos, max(self.BLOCK, want))
        if len(data) < want:
            raise Malformed("truncated while reading (the file changed size)")
        self._base, self._buf = pos, data
        return data, 0

    def digest(self, start: int, end: int) -> str:
        """A short content digest of the bytes in ``[start, end)``, read in 1 MiB chunks. SHA-256,
        not BLAKE2: CPUs with SHA extensions hash it faster."""
        h = hashlib.sha256()
        pos = start
        while pos < end:
            n = min(1 << 20, end - pos)
            data = self._read_at(pos, n)
            if len(data) < n:
                raise Malformed("truncated while reading (the file changed size)")
            h.update(data)
            pos += n
        return h.hexdigest()[:12]  # 48 bits: a change goes unnoticed with odds of 1 in 2.8e14

    def bytes(self, pos: int, n: int) -> bytes:
        if n > self.BLOCK:
            data = self._read_at(pos, n)
            if len(data) < n:
                raise Malformed("truncated while reading (the file changed size)")
            return data
        buf, i = self.window(pos, n)
        return buf[i : i + n]


def varint_in(buf: bytes, off: int, pos: int, end: int) -> tuple[int, int]:
    """The varint at byte ``pos`` (``buf[pos + off]``) of a message ending at ``end``, and the position
    after it; the bytes up to ``end`` are all in ``buf``."""
    result = shift = 0
    for _ in range(10):
        if pos >= end:
            raise Malformed(f"truncated varint at byte {pos}")
        b = buf[pos + off]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
    raise Malformed(f"invalid varint ending at byte {pos}")




class WireReader:
    """The fields of protobuf messages in a file, read through a `Source`: tags, varints and lengths
    decoded, payloads stepped over unless asked for."""

    def __init__(self, src: Source) -> None:
        self.src = src


    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """Yield ``(field, wire_type, a, b)`` for each field of the message in ``[start, end)``: the
        value and 0 for a varint, the start and end of the payload for the other wire types.

        A message that fits in one block (nodes, attributes, value infos: nearly all of them) is decoded
        from a single buffer with the one-byte varints inlined, which matters for a model of many small
        nodes because the walk runs before every build. A larger message is walked through the block cache, so its weights
        are stepped over unread."""
        if end - start <= Source.BLOCK:
            buf, i = self.src.window(start, end - start)
            return self._fields_in(buf, i - start, start, end)
        return self._fields_paged(start, end)

    def _fields_in(self, buf: bytes, off: int, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """``fields`` over a message whose bytes are all in ``buf``: byte ``pos`` is ``buf[pos + off]``."""
        pos = start
        while pos < end:
            tag_at = pos
            key = buf[pos + off]
            if key < 0x80:
                pos += 1
            else:
                key, pos = varint_in(buf, off, pos, end)
            field, wire = key >> 3, key & 7
            if field == 0:
                raise Malformed(f"field number 0 at byte {tag_at}")
            if wire == VARINT:
                if pos < end and buf[pos + off] < 0x80:
                    value = buf[pos + off]
                    pos += 1
                else:
                    value, pos = varint_in(buf, off, pos, end)
                yield field, wire, value, 0
                continue
            if wire == LEN:
                if pos < end and buf[pos + off] < 0x80:
                    size = buf[pos + off]
                    pos += 1
                else:
                    size, pos = varint_in(buf, off, pos, end)
            else:
                size = self.fixed_size(wire, tag_at)
            if size > end - pos:
                raise self.overrun(field, tag_at, size, end - pos, end)
            yield field, wire, pos, pos + size
            pos += size

    def _fields_paged(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """``fields`` over a message of any size, read through the block cache: each field's tag and
        length (at most 20 bytes) come from one window, its payload is stepped over."""
        pos = start
        while pos < end:
            tag_at = pos
            buf, i = self.src.window(pos, 20)
            off = i - pos
            key = buf[i]
            if key < 0x80:
                pos += 1
            else:
                key, pos = varint_in(buf, off, pos, end)
            field, wire = key >> 3, key & 7
            if field == 0:
                raise Malformed(f"field number 0 at byte {tag_at}")
            if wire == VARINT:
                value, pos = varint_in(buf, off, pos, end)
                yield field, wire, value, 0
                continue
            if wire == LEN:
                size, pos = varint_in(buf, off, pos, end)
            else:
                size = self.fixed_size(wire, tag_at)
            if size > end - pos:
                raise self.overrun(field, tag_at, size, end - pos, end)
            yield field, wire, pos, pos + size
            pos += size

    @staticmethod
    def fixed_size(wire: int, tag_at: int) -> int:
        if wire == I64:
            return 8
        if wire == I32:
            return 4
        if wire in (SGROUP, EGROUP):
            raise Malformed(f"unsupported group wire type {wire} at byte {tag_at}")
        raise Malformed(f"invalid wire type {wire} at byte {tag_at}")

    def overrun(self, field: int, tag_at: int, size: int, left: int, end: int) -> Malformed:
        if end == self.src.size:
            return Malformed(f"truncated or corrupt: field {field} at byte {tag_at} needs {size} bytes, {left} left")
        return Malformed(f"field {field} at byte {tag_at} runs past the end of its message")

    @staticmethod
    def expect(wire: int, want: int, what: str) -> None:
        if wire != want:
            raise Malformed(f"{what} has wire type {wire}, expected {want}")

    def string(self, start: int, end: int) -> str:
        return self.src.bytes(start, end - start).decode("utf-8", errors="replace")

    @staticmethod
    def int64(value: int) -> int:
        return value - (1 << 64) if value >= 1 << 63 else value
