import inspect

import evalnb


def test_all_is_sorted_and_exactly_the_public_names():
    assert evalnb.__all__ == sorted(evalnb.__all__)
    # The names load lazily: dir() lists them, getattr() loads each.
    public = {
        name
        for name in dir(evalnb)
        if not name.startswith("_")
        and not inspect.ismodule(getattr(evalnb, name))
        and name != "annotations"
    }
    assert set(evalnb.__all__) == public


def test_every_public_name_has_a_docstring():
    for name in evalnb.__all__:
        assert inspect.getdoc(getattr(evalnb, name)), name
