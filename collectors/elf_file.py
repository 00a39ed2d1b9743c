"""Reading an ELF file's bytes, with the one-line errors every analysis path shares.

A module of its own because the push path needs it before anything else: it imports
nothing heavy, so ``selector select`` can hand the bytes to the compiled core while
numpy and pandas are still being imported.
"""

from __future__ import annotations

from perf_selector.collectors.errors import BinaryError


def read_elf_file(path: str, limit: int = -1) -> bytes:
    """The bytes of an ELF file (its first `limit` bytes, when given), or a one-line BinaryError:
    missing, unreadable, not ELF, too short."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit)
    except FileNotFoundError:
        raise BinaryError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BinaryError(f"{path}: is a directory, not a binary") from None
    except OSError as error:
        raise BinaryError(f"{path}: cannot read ({error.strerror})") from None
    if data[:4] != b"\x7fELF":
        raise BinaryError(f"{path}: not an ELF file")
    if len(data) < 64:
        raise BinaryError(f"{path}: truncated ELF file ({len(data)} bytes, shorter than its header)")
    return data
