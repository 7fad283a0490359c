def length_score(output, context):
    return min(1.0, len(output) / 200)


def get_assert(output, context):
    named = context["vars"]["topic"] in output.lower()
    return {"pass": named, "score": 1.0 if named else 0.0, "reason": "topic named"}
