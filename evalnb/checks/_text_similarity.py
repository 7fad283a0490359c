"""The text-similarity metrics of OpenAI's (and Azure AI Foundry's) ``text_similarity``
grader, each through the maintained library that defines it.

=================  ============================================================================
metric             score in [0, 1]
=================  ============================================================================
``fuzzy_match``    rapidfuzz ``fuzz.WRatio(answer, reference, processor=utils.default_process)
                   / 100`` (the graders guide's own fuzzy grader)
``bleu``           sacrebleu ``sentence_bleu(answer, [reference]).score / 100`` (its default
                   13a tokenizer and exponential smoothing)
``gleu``           NLTK ``sentence_gleu([reference tokens], answer tokens)``
``meteor``         NLTK ``meteor_score([reference tokens], answer tokens)`` (alpha 0.9, beta 3,
                   gamma 0.5) with WordNet 3.0 synonyms
``rouge_1..5``,    rouge-score ``RougeScorer([rougeN]).score(reference, answer)`` F-measure
``rouge_l``        (``rougeL``), without stemming
=================  ============================================================================

Tokens (GLEU, METEOR) are NLTK's word tokenizer (``NLTKWordTokenizer``: what
``nltk.word_tokenize`` applies within each sentence; its sentence split needs data NLTK
downloads, so it is left out). WordNet is NLTK's own data when installed
(``nltk.download("wordnet")``), else Debian's ``wordnet-base`` (``/usr/share/wordnet``, the
same WordNet 3.0). ``cosine`` needs embeddings: evalnb's ``similar`` check grades it.

:func:`missing` says in one line what a metric lacks here and how to install it;
:func:`score` gives ``(score, engine)``, the engine naming the library and its version.
"""

from __future__ import annotations

import functools
import importlib.metadata
import io
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["METRICS", "missing", "score"]

#: Every metric, and the distribution that computes it.
METRICS = {
    "fuzzy_match": "rapidfuzz",
    "bleu": "sacrebleu",
    "gleu": "nltk",
    "meteor": "nltk",
    **{f"rouge_{n}": "rouge-score" for n in (1, 2, 3, 4, 5)},
    "rouge_l": "rouge-score",
}

#: Debian's WordNet 3.0 (``apt-get install wordnet-base``).
DEBIAN_WORDNET = Path("/usr/share/wordnet")
#: WordNet 3.0's lexicographer files, in order (lexnames(5WN)); Debian leaves the file out.
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute "
    "noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group "
    "noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant "
    "noun.possession noun.process noun.quantity noun.relation noun.shape noun.state "
    "noun.substance noun.time verb.body verb.change verb.cognition verb.communication "
    "verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
)
LEXNAMES = tuple(_LEXNAMES.split())
_INSTALL = "pip install 'evalnb[similarity]'"
_WORDNET_LOCK = threading.Lock()


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _has_nltk_wordnet() -> bool:
    import nltk

    try:
        nltk.data.find("corpora/wordnet")
    except LookupError:
        try:
            nltk.data.find("corpora/wordnet.zip")
        except LookupError:
            return False
    return True


def missing(metric: str) -> str | None:
    """What ``metric`` lacks here, in one line saying what to do; None when it can be
    computed."""
    if metric not in METRICS:
        return f"{metric!r} is not a text_similarity metric (metrics: {', '.join(METRICS)})"
    distribution = METRICS[metric]
    if _version(distribution) is None:
        return f"{metric} is computed by {distribution}, which is not installed: {_INSTALL}"
    if metric == "meteor" and not (_has_nltk_wordnet() or (DEBIAN_WORDNET / "data.noun").is_file()):
        return (
            "meteor needs WordNet: apt-get install wordnet-base, or "
            "python -m nltk.downloader wordnet"
        )
    return None


def engine(metric: str) -> str:
    """The library that computes ``metric`` and its version (``sacrebleu 2.6.0``)."""
    distribution = METRICS[metric]
    return f"{distribution} {_version(distribution)}"


@functools.cache
def _tokenize() -> Callable[[str], list[str]]:
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer = NLTKWordTokenizer()
    return lambda text: list(tokenizer.tokenize(text))


@functools.cache
def _wordnet() -> Any:
    """NLTK's WordNet reader: NLTK's own data, else Debian's WordNet 3.0 files."""
    if _has_nltk_wordnet():
        from nltk.corpus import wordnet

        return wordnet
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class DebianWordNet(WordNetCorpusReader):  # type: ignore[misc,unused-ignore]
        """Debian's files, the ``lexnames`` table it leaves out given from :data:`LEXNAMES`,
        and no mapping to another WordNet version (these are 3.0's own)."""

        def open(self, file: str) -> Any:
            if file == "lexnames":
                rows = (f"{i:02d}\t{name}\t0\n" for i, name in enumerate(LEXNAMES))
                return io.StringIO("".join(rows))
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    # NLTK reads corpora only under the folders of its data path.
    if str(DEBIAN_WORDNET) not in nltk.data.path:
        nltk.data.path.append(str(DEBIAN_WORDNET))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        return DebianWordNet(str(DEBIAN_WORDNET), None)


def _meteor(answer: str, reference: str) -> float:
    from nltk.translate.meteor_score import meteor_score

    tokens = _tokenize()
    # NLTK's WordNet reader seeks and reads one shared file handle: two threads in it read
    # each other's lines (a synset silently missing, a lower score, or an error). One
    # meteor at a time.
    with _WORDNET_LOCK:
        wordnet = _wordnet()
        return float(meteor_score([tokens(reference)], tokens(answer), wordnet=wordnet))


def _gleu(answer: str, reference: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu

    tokens = _tokenize()
    return float(sentence_gleu([tokens(reference)], tokens(answer)))


def _bleu(answer: str, reference: str) -> float:
    import sacrebleu

    return float(sacrebleu.sentence_bleu(answer, [reference]).score) / 100.0


def _fuzzy(answer: str, reference: str) -> float:
    from rapidfuzz import fuzz, utils

    return float(fuzz.WRatio(answer, reference, processor=utils.default_process)) / 100.0


def _rouge(kind: str) -> Callable[[str, str], float]:
    def compute(answer: str, reference: str) -> float:
        from rouge_score import rouge_scorer

        scorer = rouge_scorer.RougeScorer([kind])
        return float(scorer.score(reference, answer)[kind].fmeasure)

    return compute


_COMPUTE: dict[str, Callable[[str, str], float]] = {
    "fuzzy_match": _fuzzy,
    "bleu": _bleu,
    "gleu": _gleu,
    "meteor": _meteor,
    **{f"rouge_{n}": _rouge(f"rouge{n}") for n in (1, 2, 3, 4, 5)},
    "rouge_l": _rouge("rougeL"),
}


def score(metric: str, answer: str, reference: str) -> tuple[float, str]:
    """``(score in [0, 1], engine)`` of ``answer`` against ``reference`` (see the module);
    ``ValueError`` when the metric cannot be computed here (:func:`missing` says why)."""
    reason = missing(metric)
    if reason is not None:
        raise ValueError(reason)
    value = _COMPUTE[metric](answer, reference)
    return min(1.0, max(0.0, value)), engine(metric)
