"""A shallow error hierarchy. Every message names the record, the stage and the fix."""

from __future__ import annotations

from typing import Any


class BargeinError(Exception):
    """Base of every error bargein raises on purpose (user errors print without traceback)."""

    def __init__(self, message: str, *, evidence: Any = None):
        super().__init__(message)
        self.evidence = evidence


class ConfigError(BargeinError):
    """A config file, preset or CLI value is wrong. The message names the key, the value and the fix."""


class InputError(ConfigError):
    """An input file cannot be used as given (missing, not UTF-8, not JSON/YAML, a folder that
    must not be replaced). The message names the file, where in it, and the fix."""


class BackendUnavailable(BargeinError):
    """An optional backend is not installed or cannot run here. The message names the extra."""


class GenerationFailed(BargeinError):
    """An agent could not produce a valid output (evidence: attempts, raw answers, errors)."""


class AlignmentFailed(BargeinError):
    """Forced alignment failed or was low-confidence."""


class AudioError(BargeinError):
    """Audio could not be read, synthesised or rendered."""


class BudgetExceeded(BargeinError):
    """The cost cap was reached; no new LLM call is started."""


class ReleaseError(BargeinError):
    """A release folder, manifest, push or pull is invalid."""


class NotBuiltYet(BargeinError):
    """A command whose issue has not landed yet."""


def missing_extra(module: str, extra: str, what: str) -> BackendUnavailable:
    return BackendUnavailable(
        f"{what} needs the Python module '{module}', which is not installed. "
        f"Fix: pip install 'bargein[{extra}]'"
    )
