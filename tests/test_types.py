from evalnb import Case, Variant


def test_baseline_sends_the_prompt_as_is():
    case = Case("c", prompt="Where is my order?")
    assert Variant("baseline").messages_for(case) == (
        {"role": "user", "content": "Where is my order?"},
    )
    assert Variant("baseline").is_baseline


def test_prefix_goes_before_the_last_user_message_and_system_is_replaced():
    case = Case(
        "c",
        messages=[
            {"role": "system", "content": "old"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second"},
        ],
    )
    messages = Variant("v", prefix="Read first.", system="new").messages_for(case)
    assert messages[0] == {"role": "system", "content": "new"}
    assert [m["content"] for m in messages[1:]] == ["first", "ok", "Read first.\n\nsecond"]
    # the case itself is untouched
    assert case.messages[3]["content"] == "second"


def test_prefix_ending_in_whitespace_is_joined_as_is():
    case = Case("c", prompt="Q?")
    assert Variant("v", prefix="Note:\n").messages_for(case)[0]["content"] == "Note:\nQ?"


def test_text_of_reads_a_string_or_the_text_parts_and_strictly_refuses_other_parts() -> None:
    from evalnb._types import text_of

    parts = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert text_of("hi") == text_of("hi", strict=True) == "hi"
    assert text_of(parts) == "a\nb" and text_of(parts, sep="", strict=True) == "ab"
    mixed = [*parts, {"type": "image_url", "image_url": {"url": "data:"}}]
    assert text_of(mixed) == "a\nb" and text_of(mixed, strict=True) is None
    assert text_of(None) == "" and text_of(None, strict=True) is None
    assert text_of([], strict=True) is None
