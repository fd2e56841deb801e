"""Creation times: RFC 3339 strings from the API server, or virtual seconds from the simulator."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["format_timestamp", "parse_timestamp"]


def parse_timestamp(value: str | None) -> float:
    """Seconds since the epoch (or since the simulation began); 0.0 when absent or unreadable."""
    if not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return 0.0


def format_timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")
