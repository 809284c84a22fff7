"""`narrate dashboard` refuses to serve off loopback without a username and password."""

from __future__ import annotations

import pytest
from narrate.jobs.dashboard.app import check_exposure
from narrate.jobs.errors import BadInput


def test_refuses_to_serve_off_loopback_without_a_password():
    check_exposure("127.0.0.1", None, None)
    with pytest.raises(BadInput, match="without a username and password"):
        check_exposure("0.0.0.0", None, None)
    check_exposure("0.0.0.0", "admin", "pw")
