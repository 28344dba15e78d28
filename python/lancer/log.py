"""Python logging of the package, as pylance 14's ``lance.log``: the level named by the
``LANCE_LOG`` environment variable (``get_log_level``), and ``set_logger`` to send the
``"pylance"`` logger (or another) to a file or handler.

``LANCE_LOG`` holds a Rust-style filter (``"debug"``, ``"warn,lance=trace"``): its first
entry without ``=``, upper-cased, is the level (``trace`` is ``DEBUG``: Python has no
trace), ``INFO`` when unset, empty or only ``target=level`` entries. The ``"pylance"``
logger (``LOGGER``) gets that level when this module is imported, as pylance's does;
where pylance's import fails on a level Python does not know (``LANCE_LOG=verbose``:
``ValueError``), lancer's leaves the logger's level alone. Lancer's engine logs nothing
through Python's logging: the logger is there for code written for pylance's.
"""

from __future__ import annotations

import logging
import os
from typing import Optional

__all__ = ["get_log_level", "get_python_log_level", "set_logger"]

ENV_NAME_PYLANCE_LOGGING_LEVEL = "LANCE_LOG"

_FORMAT = "%(asctime)s %(name)s [%(levelname)s] %(filename)s:%(lineno)d %(funcName)s : %(message)s"


def get_python_log_level(rust_log_level: str) -> str:
    """The Python level for a Rust one: ``trace`` (any case) is ``"DEBUG"``; any other
    name is returned as given."""
    return "DEBUG" if rust_log_level.lower() == "trace" else rust_log_level


def get_log_level() -> str:
    """The level ``LANCE_LOG`` names (see the module's text); ``"INFO"`` by default."""
    text = os.environ.get(ENV_NAME_PYLANCE_LOGGING_LEVEL, "INFO").upper()
    plain = [entry for entry in text.split(",") if "=" not in entry]
    if not text or not plain:
        return "INFO"
    return get_python_log_level(plain[0])


LOGGER = logging.getLogger("pylance")
try:
    LOGGER.setLevel(get_log_level())
except ValueError:  # a level Python does not know (pylance's import fails here)
    pass


def set_logger(file_path: Optional[str] = "pylance.log", name: str = "pylance", level: int = logging.INFO,
               format_string: Optional[str] = None, log_handler: Optional[logging.Handler] = None) -> None:
    """Makes the logger ``name`` this module's ``LOGGER``, at ``level``, and adds to it
    ``log_handler`` (by default a ``logging.FileHandler`` writing ``file_path``) at
    ``level`` with ``format_string`` (by default pylance's: time, logger, level, file,
    line, function, message). Each call adds one more handler, as pylance's."""
    global LOGGER
    LOGGER = logging.getLogger(name)
    LOGGER.setLevel(level)
    handler = logging.FileHandler(file_path) if log_handler is None else log_handler
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(format_string or _FORMAT))
    LOGGER.addHandler(handler)
