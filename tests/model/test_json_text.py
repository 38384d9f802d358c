"""Standard JSON out of every document: non-finite floats as null, numpy values as numbers."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grapeshot.model.json_text import json_text


def _strict(text: str):
    def refuse(token: str):
        raise AssertionError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_values_become_null_at_any_depth():
    doc = {
        "a": math.nan,
        "b": [1.5, -math.inf, (math.inf, 2)],
        "c": np.array([[1.0, np.nan], [np.inf, 3.0]]),
        "d": np.float64("nan"),
        "e": {"f": np.float32(2.5), "g": np.int64(7), "h": np.bool_(True)},
    }
    assert _strict(json_text(doc)) == {
        "a": None,
        "b": [1.5, None, [None, 2]],
        "c": [[1.0, None], [None, 3.0]],
        "d": None,
        "e": {"f": 2.5, "g": 7, "h": True},
    }


def test_a_finite_document_is_what_json_dumps_writes():
    doc = {"x": [1, 2.5, "s", None, True], "y": {"z": -0.0}}
    assert json_text(doc, indent=2) == json.dumps(doc, indent=2)
    assert json_text(doc, separators=(",", ":")) == json.dumps(doc, separators=(",", ":"))


def test_what_json_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="cannot write a value of type object as JSON"):
        json_text({"x": object()})


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_any_document_is_standard_json_and_keeps_its_finite_values(doc):
    def finite(v):
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        if isinstance(v, list):
            return [finite(x) for x in v]
        if isinstance(v, dict):
            return {k: finite(x) for k, x in v.items()}
        return v

    assert _strict(json_text(doc)) == finite(doc)
