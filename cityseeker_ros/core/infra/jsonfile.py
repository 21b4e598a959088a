"""Reading a JSON data file: the one place where every way it can fail becomes a DataError.

Data folders come from users and from other tools, so a file may be missing, not UTF-8, not
JSON, hold an integer of a million digits, or be nested deeper than Python's recursion limit
('[' * 100000). Each of those is one line naming the file, never a traceback.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cityseeker_ros.core.infra.errors import DataError
from cityseeker_ros.core.infra.text import clean_json


def read_json_file(path: str | Path, missing: str = "file not found") -> Any:
    """The parsed document, its strings made valid Unicode (core/infra/text.py); `missing` is the
    message when the file does not exist."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as f:
            return clean_json(json.load(f))
    except FileNotFoundError:
        raise DataError(path, missing) from None
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise DataError(path, "JSON nested too deeply to read (arrays or objects inside each other "
                              "past Python's recursion limit)") from None
    except ValueError as exc:  # e.g. an integer longer than Python converts
        raise DataError(path, f"invalid JSON value: {exc}"[:300]) from None
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc.strerror or exc}") from None


def read_json_object(path: str | Path, missing: str = "file not found") -> dict[str, Any]:
    """read_json_file for a document that must be one JSON object."""
    doc = read_json_file(path, missing)
    if not isinstance(doc, dict):
        raise DataError(Path(path), f"expected a JSON object, got {type(doc).__name__}")
    return doc
