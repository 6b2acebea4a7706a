"""Int-or-percent values (Kubernetes IntOrString) and how each budget rounds.

A value is either a non-negative integer (``2``) or a percentage string (``"25%"``). Percentages
are taken of a total and rounded in the direction that keeps the rollout safe:

- ``maxUnavailable`` rounds **down**: 25% of 6 groups = 1.5 -> 1 (never take more capacity away
  than asked);
- ``maxSurge`` rounds **up**: 25% of 6 = 1.5 -> 2 (a surge of "some" is at least one);
- ``partition`` rounds **up**: 50% of 5 = 2.5 -> 3 (protect at least as many as asked).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

_PERCENT = re.compile(r"^(\d+)%$")


class IntOrPercentError(ValueError):
    """The value is neither a non-negative integer nor a percentage string."""


@dataclass(frozen=True, slots=True)
class IntOrPercent:
    value: int
    percent: bool

    @classmethod
    def parse(cls, raw: object, *, max_percent: int | None = 100) -> IntOrPercent:
        # bool is an int in Python; "maxUnavailable: true" is a mistake, not 1.
        if isinstance(raw, bool):
            raise IntOrPercentError(f"expected an integer or a percentage like '25%', got {raw!r}")
        if isinstance(raw, int):
            if raw < 0:
                raise IntOrPercentError(f"must not be negative, got {raw}")
            return cls(raw, False)
        if isinstance(raw, float) and raw.is_integer():
            return cls.parse(int(raw), max_percent=max_percent)
        if isinstance(raw, str):
            text = raw.strip()
            match = _PERCENT.match(text)
            if match:
                pct = int(match.group(1))
                if max_percent is not None and pct > max_percent:
                    raise IntOrPercentError(f"percentage must be at most {max_percent}%, got {raw!r}")
                return cls(pct, True)
            if text.lstrip("-").isdigit():
                # Kubernetes treats "2" as a string, not an int; say what to write instead.
                raise IntOrPercentError(f"write an integer without quotes or a percentage like '25%', got {raw!r}")
            if text.startswith("-") and text.endswith("%"):
                raise IntOrPercentError(f"must not be negative, got {raw!r}")
        raise IntOrPercentError(f"expected an integer or a percentage like '25%', got {raw!r}")

    def resolve(self, total: int, *, round_up: bool) -> int:
        """The count this value stands for out of ``total``.

        >>> IntOrPercent.parse("25%").resolve(6, round_up=False)
        1
        >>> IntOrPercent.parse("25%").resolve(6, round_up=True)
        2
        """
        if not self.percent:
            return self.value
        exact = Fraction(self.value * total, 100)
        return math.ceil(exact) if round_up else math.floor(exact)

    def to_json(self) -> int | str:
        return f"{self.value}%" if self.percent else self.value

    def __str__(self) -> str:
        return str(self.to_json())
