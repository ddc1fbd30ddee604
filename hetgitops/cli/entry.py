"""The `hetgitops` console script: the CLI behind a guard for the one fault no later code can
catch, memory running out while the CLI's own modules (click, jsonschema, the compiled
validator's shared library) are still being imported. Imports only what the interpreter has
already loaded, so that it can speak when nothing else can."""

from __future__ import annotations

import contextlib
import os
from typing import NoReturn

EXIT_ENVIRONMENT = 4  # the same code as cli.common's, which this must not import first

# Made before memory runs out: writing it allocates nothing.
OUT_OF_MEMORY = (
    b"hetgitops: out of memory (a limit such as `ulimit -v`, a container's, or the "
    b"machine's); nothing was completed (exit 4: the environment failed, not hetgitops)\n"
)


def out_of_memory() -> NoReturn:
    """Say "out of memory" on stderr as far as it can be said and exit 4 at once: unwinding
    further or flushing Python's streams would need the memory that is not there."""
    with contextlib.suppress(OSError):
        os.write(2, OUT_OF_MEMORY)
    os._exit(EXIT_ENVIRONMENT)


def failed_allocation(exc: BaseException) -> bool:
    """Memory ran out, said otherwise: a shared library (the compiled validator, orjson) that
    could not be mapped, or CPython code whose failed allocation set no MemoryError (seen in
    `re` while jinja2 compiles its patterns under `ulimit -v`)."""
    text = str(exc)
    if isinstance(exc, ImportError):
        return "failed to map segment" in text or "Cannot allocate memory" in text
    return isinstance(exc, SystemError) and "without exception set" in text


def main() -> None:
    try:
        from hetgitops.cli.main import main as cli
    except MemoryError:
        out_of_memory()
    except (ImportError, SystemError) as exc:
        if failed_allocation(exc):
            out_of_memory()
        raise
    try:
        cli()
    except MemoryError:  # raised where no command's guard runs (option parsing, click)
        out_of_memory()
    except (ImportError, SystemError) as exc:
        # Commands load when they run (cli.main.LazyGroup), so the compiled validator's shared
        # library can fail to map here too, after the CLI itself imported.
        if failed_allocation(exc):
            out_of_memory()
        raise
