"""docs/readiness.md lists the decision table and the ceilings exactly as the code has them."""

from __future__ import annotations

from agc.readiness import CEILINGS, DECISION_TABLE
from tests.conftest import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "readiness.md").read_text()


def test_every_row_is_documented_in_order() -> None:
    positions = []
    for number, row in enumerate(DECISION_TABLE, start=1):
        label = f"{row.level}/{row.blocker}" if row.blocker else row.level
        line = f"| {number} | `{row.id}` | {row.observed} | `{label}` |"
        assert line in DOC, f"docs/readiness.md lacks row {row.id} as the code has it"
        positions.append(DOC.index(line))
    assert positions == sorted(positions)


def test_every_ceiling_is_documented() -> None:
    for ceiling in CEILINGS:
        assert f"| `{ceiling.id}` | {ceiling.observed} |" in DOC
