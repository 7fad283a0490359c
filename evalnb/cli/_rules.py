"""The run's rule flags: ``--until best[:eps=E,delta=D,check=NAME]`` (race the variants to
the best one, ``evalnb.Best``) and ``--repeats settled[:max=N,alpha=A,tol=T]`` (repeats
until each case is settled, ``evalnb.UntilSettled``), read into the rule the manifest
records. A mistake is one line naming the flag (exit 2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalnb._exceptions import EvalnbError
from evalnb._stopping import RepeatRule, StoppingRule, repeat_rule_from_record, rule_from_record
from evalnb.cli._common import UsageError

__all__ = ["RULE_FLAGS", "race_note", "repeats_flag", "until_flag"]

#: Each flag's rule and the settings it takes (their kinds: a number, or text).
RULE_FLAGS: dict[str, tuple[str, dict[str, type]]] = {
    "--until": ("best", {"eps": float, "delta": float, "check": str}),
    "--repeats": ("settled", {"max": int, "alpha": float, "tol": float}),
}


def _settings(flag: str, given: str) -> dict[str, Any]:
    """``name[:key=value,...]`` read for ``flag``: the rule's record."""
    name, settings = RULE_FLAGS[flag]
    head, colon, tail = given.partition(":")
    spelled = f"{name}[:{','.join(f'{k}=...' for k in settings)}]"
    if head != name or (colon and not tail):
        raise UsageError(f"{flag} must be {spelled}; got {given!r}")
    record: dict[str, Any] = {"rule": name}
    for item in filter(None, tail.split(",")) if colon else ():
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in settings:
            raise UsageError(
                f"{flag} {name}: settings are {', '.join(settings)} as KEY=VALUE; got {item!r}"
            )
        if key in record:
            raise UsageError(f"{flag} {name}: {key!r} is given twice")
        kind = settings[key]
        try:
            record[key] = kind(value.strip()) if kind is not int else _whole(value)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise UsageError(f"{flag} {name}: {key!r} must be {what}; got {value!r}") from None
    return record


def _whole(value: str) -> int:
    number = float(value)
    if not number.is_integer():
        raise ValueError(value)
    return int(number)


def until_flag(given: str | None) -> StoppingRule | None:
    """The rule ``--until`` names (None without the flag)."""
    if given is None:
        return None
    record = _settings("--until", given)
    try:
        return rule_from_record(record)
    except (EvalnbError, ValueError, TypeError) as exc:
        raise UsageError(f"--until {record['rule']}: {exc}") from None


def repeats_flag(given: str | None) -> int | RepeatRule | None:
    """``--repeats``: a whole number of repeats, or the rule ``settled[...]`` names."""
    if given is None:
        return None
    if not given.startswith("settled"):
        try:
            return _whole(given)
        except ValueError:
            raise UsageError(
                f"--repeats must be a whole number or settled[:max=N,alpha=A,tol=T]; got {given!r}"
            ) from None
    record = _settings("--repeats", given)
    record.setdefault("max", 10)
    try:
        return repeat_rule_from_record(record)
    except (EvalnbError, ValueError, TypeError) as exc:
        raise UsageError(f"--repeats settled: {exc}") from None


def race_note(until: Mapping[str, Any]) -> str | None:
    """One line on a race's end: who is best (or left), after how many cases, and who
    went when; None for a run that was not a race."""
    rule = until.get("rule") or {}
    if rule.get("rule") != "best":
        return None
    looks = until.get("looks") or []
    last = looks[-1] if looks else {}
    alive = list(last.get("alive") or [])
    told = (
        f"race: {alive[0]} is best"
        if len(alive) == 1
        else f"race: {len(alive)} variants left ({', '.join(alive)}; leading: {last.get('leader')})"
    )
    told += (
        f" after {last.get('cases', 0)} of {len(until.get('order') or [])} cases (stopped: "
        f"{until.get('stopped')}; each pair's test at {rule.get('delta')} / (variants - 1))"
    )
    gone = until.get("eliminations") or []
    if gone:
        told += "; eliminated: " + ", ".join(
            f"{e['variant']} after {e['look']} (by {e['by']})" for e in gone
        )
    return told
