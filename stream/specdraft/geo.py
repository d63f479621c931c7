"""Geography the draft knows without a grouping column: US states to Census divisions and regions.

State codes are not geography in their digits (FIPS numbers are alphabetical: masking ``36`` to
``3*`` puts New York with Montana), so a state column is grouped state -> division -> region -> *,
the Census Bureau's own nesting. Each state is listed by FIPS code, postal abbreviation and name.
"""

from __future__ import annotations

from collections.abc import Iterable

# (FIPS, postal, name, Census division, Census region)
STATES: tuple[tuple[int, str, str, str, str], ...] = (
    (9, "CT", "Connecticut", "New England", "Northeast"), (23, "ME", "Maine", "New England", "Northeast"),
    (25, "MA", "Massachusetts", "New England", "Northeast"), (33, "NH", "New Hampshire", "New England", "Northeast"),
    (44, "RI", "Rhode Island", "New England", "Northeast"), (50, "VT", "Vermont", "New England", "Northeast"),
    (34, "NJ", "New Jersey", "Middle Atlantic", "Northeast"), (36, "NY", "New York", "Middle Atlantic", "Northeast"),
    (42, "PA", "Pennsylvania", "Middle Atlantic", "Northeast"),
    (17, "IL", "Illinois", "East North Central", "Midwest"), (18, "IN", "Indiana", "East North Central", "Midwest"),
    (26, "MI", "Michigan", "East North Central", "Midwest"), (39, "OH", "Ohio", "East North Central", "Midwest"),
    (55, "WI", "Wisconsin", "East North Central", "Midwest"), (19, "IA", "Iowa", "West North Central", "Midwest"),
    (20, "KS", "Kansas", "West North Central", "Midwest"), (27, "MN", "Minnesota", "West North Central", "Midwest"),
    (29, "MO", "Missouri", "West North Central", "Midwest"), (31, "NE", "Nebraska", "West North Central", "Midwest"),
    (38, "ND", "North Dakota", "West North Central", "Midwest"),
    (46, "SD", "South Dakota", "West North Central", "Midwest"),
    (10, "DE", "Delaware", "South Atlantic", "South"), (11, "DC", "District of Columbia", "South Atlantic", "South"),
    (12, "FL", "Florida", "South Atlantic", "South"), (13, "GA", "Georgia", "South Atlantic", "South"),
    (24, "MD", "Maryland", "South Atlantic", "South"), (37, "NC", "North Carolina", "South Atlantic", "South"),
    (45, "SC", "South Carolina", "South Atlantic", "South"), (51, "VA", "Virginia", "South Atlantic", "South"),
    (54, "WV", "West Virginia", "South Atlantic", "South"), (1, "AL", "Alabama", "East South Central", "South"),
    (21, "KY", "Kentucky", "East South Central", "South"), (28, "MS", "Mississippi", "East South Central", "South"),
    (47, "TN", "Tennessee", "East South Central", "South"), (5, "AR", "Arkansas", "West South Central", "South"),
    (22, "LA", "Louisiana", "West South Central", "South"), (40, "OK", "Oklahoma", "West South Central", "South"),
    (48, "TX", "Texas", "West South Central", "South"), (4, "AZ", "Arizona", "Mountain", "West"),
    (8, "CO", "Colorado", "Mountain", "West"), (16, "ID", "Idaho", "Mountain", "West"),
    (30, "MT", "Montana", "Mountain", "West"), (32, "NV", "Nevada", "Mountain", "West"),
    (35, "NM", "New Mexico", "Mountain", "West"), (49, "UT", "Utah", "Mountain", "West"),
    (56, "WY", "Wyoming", "Mountain", "West"), (2, "AK", "Alaska", "Pacific", "West"),
    (6, "CA", "California", "Pacific", "West"), (15, "HI", "Hawaii", "Pacific", "West"),
    (41, "OR", "Oregon", "Pacific", "West"), (53, "WA", "Washington", "Pacific", "West"),
)


def _key(value: str) -> str:
    v = value.strip()
    return str(int(v)) if v.isdigit() else v.upper()


_LOOKUP: dict[str, tuple[str, str]] = {}
for _fips, _postal, _name, _division, _region in STATES:
    for _k in (str(_fips), _postal, _name.upper()):
        _LOOKUP[_k] = (_division, _region)


def state_rows(values: Iterable[str]) -> list[list[str]] | None:
    """Rows ``[state, division, region, *]`` when every value is a US state (FIPS, postal or name)."""
    uniq = sorted(set(values))
    if len(uniq) < 3 or any(_key(v) not in _LOOKUP for v in uniq):
        return None
    return [[v, *_LOOKUP[_key(v)], "*"] for v in sorted(uniq, key=lambda v: (_LOOKUP[_key(v)][::-1], v))]
