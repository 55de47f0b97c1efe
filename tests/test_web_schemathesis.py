"""Property-based API testing (issue 8): schemathesis generates requests from the app's own
OpenAPI schema (valid and invalid bodies) and every answer must be a non-5xx; 422 answers must
carry the field and the reason. Examples per operation are bounded so the module runs in about a
minute on 2 cores (the plan search is the slowest operation, ~0.1-2 s a call)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web API needs the [web] extra: pip install -e '.[web]'")
schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the [dev] extra")

from hypothesis import HealthCheck, settings  # noqa: E402

from llmecon.web import create_app  # noqa: E402

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app())


@schema.parametrize()
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_no_server_errors(case):
    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.path} {case.body!r}: {response.status_code} {response.text}"
    if response.status_code == 422:
        detail = response.json()["detail"]
        assert isinstance(detail, list) and detail, response.text
        for d in detail:
            assert d["msg"] and isinstance(d["loc"], list) and "Traceback" not in d["msg"]
