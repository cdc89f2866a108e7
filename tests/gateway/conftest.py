"""Make the shared sample tables importable as ``gateway_samples``.

The suite runs with ``--import-mode=importlib``, which puts no test directory on
``sys.path``; the tables module is loaded by path once, here, before collection.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_NAME = "gateway_samples"

if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name(f"{_NAME}.py"))
    assert _spec is not None and _spec.loader is not None
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)
