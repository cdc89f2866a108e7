"""The key builder: pure functions, no server."""

from __future__ import annotations

import hashlib

import pytest

from memstrata.errors import ValidationError
from memstrata.working import keys as K


def test_session_keys_carry_the_hash_tag() -> None:
    assert K.result_key("s1", "step4") == "wm:{s1}:result:step4"
    assert K.series_key("s1", "vibration") == "wm:{s1}:ts:vibration"
    assert K.pending_key("s1") == "wm:{s1}:pending_tasks"
    assert K.plan_key("s1") == "wm:{s1}:plan"
    api = K.api_key("s1", "/temp", {"device": "D1"})
    digest = hashlib.sha256(b'/temp\n{"device":"D1"}').hexdigest()
    assert api == f"wm:{{s1}}:api:{digest}"
    for key in (api, K.result_key("s1", "x"), K.pending_key("s1")):
        assert key.startswith(K.session_prefix("s1"))


def test_preference_keys_are_tagged_by_tenant_and_user() -> None:
    assert K.pref_key("acme", "u_789", "ui_color") == "pref:{acme:u_789}:ui_color"
    assert K.pref_index_key("acme", "u_789") == "pref:{acme:u_789}:_index"
    # Two tenants' users of one id never share a key.
    assert K.pref_key("globex", "u_789", "ui_color") != K.pref_key("acme", "u_789", "ui_color")
    # No preference type can name the index key: ids must start with a letter/digit.
    with pytest.raises(ValidationError):
        K.pref_key("acme", "u_789", "_index")
    with pytest.raises(ValidationError):
        K.pref_key("a:b", "u_789", "ui_color")  # a tenant cannot forge another's tag


def test_endpoint_hash_ignores_param_order_but_not_values() -> None:
    a = K.endpoint_hash("/e", {"a": 1, "b": [1, 2]})
    assert a == K.endpoint_hash("/e", {"b": [1, 2], "a": 1})
    assert a != K.endpoint_hash("/e", {"a": 2, "b": [1, 2]})
    assert a != K.endpoint_hash("/f", {"a": 1, "b": [1, 2]})


@pytest.mark.parametrize("bad", ["a{b", "a}b", "a:b", "", " s", "x" * 129, "a*b", "a b"])
def test_ids_that_could_escape_the_tag_are_rejected(bad: str) -> None:
    with pytest.raises(ValidationError) as err:
        K.result_key(bad, "step")
    assert err.value.field == "session_id"
    with pytest.raises(ValidationError) as err2:
        K.result_key("s", bad)
    assert err2.value.field == "step_id"


def test_params_must_be_a_json_mapping() -> None:
    with pytest.raises(ValidationError) as err:
        K.api_key("s", "/e", [1, 2])  # type: ignore[arg-type]
    assert err.value.field == "params"
    with pytest.raises(ValidationError) as err2:
        K.api_key("s", "/e", {"when": object()})
    assert err2.value.field == "params"
    with pytest.raises(ValidationError) as err3:
        K.api_key("s", "/e", {"x": float("nan")})
    assert err3.value.field == "params"


@pytest.mark.parametrize(("seconds", "ms"), [(0.0001, 1), (0.25, 250), (1, 1000), (900, 900_000)])
def test_seconds_to_ms(seconds: float, ms: int) -> None:
    assert K.seconds_to_ms("ttl_s", seconds) == ms


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "5"])
def test_seconds_to_ms_rejects_bad_ttls(bad: object) -> None:
    with pytest.raises(ValidationError) as err:
        K.seconds_to_ms("ttl_s", bad)  # type: ignore[arg-type]
    assert err.value.field == "ttl_s"
