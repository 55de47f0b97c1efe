"""The curated public API stays in sync: every name in ``__all__`` resolves, sorted, no extras."""

import llmecon


def test_all_sorted_and_resolvable():
    assert llmecon.__all__ == sorted(llmecon.__all__)
    for name in llmecon.__all__:
        assert getattr(llmecon, name) is not None, name


def test_unknown_attribute_raises():
    import pytest

    with pytest.raises(AttributeError):
        llmecon.no_such_thing  # noqa: B018
