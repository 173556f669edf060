"""The run's note names a leftover process by what tells it apart (issue 25, item 8): the head of its
command and its tail, whatever the length of the install path between (CI checks out under a longer
path than a developer's machine; the tag at the end of the command must survive)."""

from __future__ import annotations

import pytest

from streambench.harness.results.summary import _middle_cut


@pytest.mark.parametrize("root", ["/w", "/check/work/main", "/" + "deep/" * 40])
def test_the_tail_of_a_long_command_survives(root: str) -> None:
    command = f"{root}/.venv/bin/python -c import time; time.sleep(600.0) sbleftf2f2f572"
    cut = _middle_cut(command, 80)
    assert len(cut) <= 80
    assert cut.endswith("sbleftf2f2f572")
    assert cut.startswith(root[:20])
    assert (cut == command) == (len(command) <= 80)
