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


def test_the_statistics_at_the_top_are_the_analysis_functions():
    # evalnb.compare is evalnb.analysis.compare: one signature, checked once by
    # tests/analysis/test_api.py.
    import evalnb.analysis

    for name in evalnb.analysis.__all__:
        if name in evalnb.__all__:
            assert getattr(evalnb, name) is getattr(evalnb.analysis, name), name
