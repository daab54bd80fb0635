"""Part-of-speech taggers for the question analysis, English and Indonesian, both offline.

The paper's Table 6 counts adjectives, nouns and verbs per question. Neither language may need a
download at run time (DESIGN.md §9), which rules out spaCy, stanza, flair and NLTK's data
packages; what ships inside a PyPI wheel is:

* **English**: TextBlob's ``PatternTagger`` — the Brill-style lexicon and context rules of the
  Pattern library, bundled in the ``textblob`` wheel; Penn Treebank tags.
* **Indonesian**: the ``nlp-id`` wheel (Kumparan) ships its tagger's training corpus
  (``nlp_id/data/dataset_postag.txt``, about 560k news tokens in nlp-id's tagset) and its feature
  function, but fetches the fitted model from the Hugging Face hub. We fit a linear classifier on
  that corpus with nlp-id's own features, once, into the user cache (like the embedded model's
  weights), and keep a held-out tenth of the sentences to report the tagger's accuracy beside
  every table that uses it.

A tagger that cannot be built is an error naming the missing package, never an empty column.

Raw tags go through :meth:`Tagger.words`, which corrects what the taggers get wrong in a way that
moves Table 6 (issue 34), and counts each correction for the run record:

* a token of punctuation or symbols only (the closing ``…`` of every question, which Pattern's
  lexicon calls a noun; quotes, dashes) is tagged ``PUNCT`` and enters no word class;
* English auxiliaries and copulas (forms of *be* and *do*; *have* before a past participle) are
  ``AUX``, not verbs, as a reader counting verbs counts them;
* an English participle between a determiner and a noun (``the following statement``) is an
  adjective.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import logging
import os
import random
import time
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

Tagged = list[tuple[str, str]]

POS_GROUPS: dict[str, dict[str, frozenset[str]]] = {
    "en": {
        "adjectives": frozenset({"JJ", "JJR", "JJS"}),
        "nouns": frozenset({"NN", "NNS", "NNP", "NNPS"}),
        "verbs": frozenset({"VB", "VBD", "VBG", "VBN", "VBP", "VBZ"}),
        "proper_nouns": frozenset({"NNP", "NNPS"}),
    },
    "id": {
        "adjectives": frozenset({"JJ"}),
        "nouns": frozenset({"NN", "NNP"}),
        "verbs": frozenset({"VB"}),
        "proper_nouns": frozenset({"NNP"}),
    },
}
"""Which tags of each language's tagset count as which word class (nouns include proper nouns)."""

TRAINING_SPEC = "nlp-id-features/dedup/hash-2^18/sgd-hinge/alpha=1e-6/epochs=5/seed=0/heldout=0.1"
"""Everything about the Indonesian fit that changes the model; part of its cache key."""


class TaggerUnavailable(RuntimeError):
    """A tagger's package is not installed (the message names the install command)."""


PUNCT = "PUNCT"
AUX = "AUX"
_BE_DO = frozenset({"be", "is", "are", "was", "were", "been", "being", "am", "'s", "'re", "'m",
                    "do", "does", "did"})  # fmt: skip
_HAVE = frozenset({"have", "has", "had", "having"})
_DETERMINERS = frozenset({"DT", "PRP$", "WP$", "POS"})


def is_punctuation(token: str) -> bool:
    """Whether ``token`` is made of punctuation and symbol characters only (``…``, ``"``, ``—``)."""
    return bool(token) and all(unicodedata.category(ch)[0] in "PS" for ch in token)


def corrections(tagged: Tagged, language: str) -> tuple[Tagged, Counter[str]]:
    """The tags with the corrections of the module docstring, and how many of each were made.

    Punctuation is counted only where its raw tag fell in a word class (a comma tagged ``,``
    changes no count).
    """
    out, made = list(tagged), Counter[str]()
    for i, (word, tag) in enumerate(out):
        if is_punctuation(word):
            if any(tag in tags for tags in POS_GROUPS[language].values()):
                made[f"punctuation tagged {tag}"] += 1  # it would have counted as a word
            out[i] = (word, PUNCT)
            continue
        if language != "en" or not tag.startswith("VB"):
            continue
        lower = word.lower()
        following = [t for _, t in out[i + 1 : i + 4] if t not in {"RB", "RBR", "RBS"}]
        if lower in _BE_DO or (lower in _HAVE and following[:1] == ["VBN"]):
            out[i] = (word, AUX)
            made["auxiliary or copula"] += 1
        elif (
            tag in {"VBG", "VBN"}
            and i > 0
            and out[i - 1][1] in _DETERMINERS
            and following[:1]
            and following[0].startswith(("NN", "JJ"))
        ):
            out[i] = (word, "JJ")
            made["participle before a noun"] += 1
    return out, made


@dataclass(frozen=True)
class Tagger:
    """One language's tagger: how to tag, and what to say about it in a report."""

    language: str
    name: str
    tag: Callable[[str], Tagged]
    notes: dict[str, Any] = field(default_factory=dict)
    corrected: Counter[str] = field(default_factory=Counter)
    """Corrections :meth:`words` made, by kind, over every text this instance tagged."""

    def words(self, text: str) -> Tagged:
        """The tagged tokens of ``text`` after :func:`corrections` (counted in ``corrected``)."""
        tagged, made = corrections(self.tag(text), self.language)
        self.corrected.update(made)
        return tagged

    def record(self) -> dict[str, Any]:
        """Name, fit notes and corrections for the run record, agreement rounded to 3 digits.

        Rounded so that a token decided differently on another CPU does not rewrite a tracked file.
        """
        notes = dict(self.notes)
        if "heldout_accuracy" in notes:
            notes["heldout_accuracy"] = round(float(notes["heldout_accuracy"]), 3)
        return {"tagger": self.name, **notes, "corrections": dict(sorted(self.corrected.items()))}

    def describe(self) -> str:
        """One sentence for the report: the tagger and, where measured, its held-out accuracy."""
        accuracy = self.notes.get("heldout_accuracy")
        if accuracy is None:
            return f"{self.language}: {self.name}"
        repairs = self.notes.get("repairs") or {}
        repaired = "; ".join(f"{k.replace('_', ' ')}: {v:,}" for k, v in repairs.items() if v)
        return (
            f"{self.language}: {self.name}; agrees with the corpus's tags on {accuracy:.1%} of "
            f"{self.notes['heldout_tokens']:,} tokens of held-out sentences (a fit to nlp-id's "
            "annotation, not a gold-treebank accuracy)"
            + (f"; corpus repairs before fitting — {repaired}" if repaired else "")
        )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError as exc:
        raise TaggerUnavailable(
            f"the question analysis needs the {package} package: run `make setup`"
        ) from exc


def english_tagger() -> Tagger:
    """TextBlob's Pattern tagger (lexicon + context rules; no download)."""
    version = _version("textblob")
    from textblob.en.taggers import PatternTagger

    tagger = PatternTagger()
    return Tagger(
        "en",
        f"TextBlob {version} PatternTagger (Pattern's Brill lexicon, Penn Treebank tags)",
        lambda text: [(w, t) for w, t in tagger.tag(text)],
    )


def _nlp_id_corpus() -> Path:
    _version("nlp-id")
    return Path(str(resources.files("nlp_id") / "data" / "dataset_postag.txt"))


def read_corpus(path: Path) -> tuple[list[Tagged], dict[str, int]]:
    """Sentences of a ``token<TAB>tag`` corpus (blank line between sentences) and its repairs.

    The only repair is a tag in lower case (the published file has one ``vb``): it is upper-cased
    and counted; any other malformed line is an error naming the line.
    """
    sentences: list[Tagged] = []
    current: Tagged = []
    repairs = {"tag_upper_cased": 0}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                if current:
                    sentences.append(current)
                current = []
                continue
            token, sep, tag = line.rpartition("\t")
            if not sep or not token or not tag.strip():
                raise ValueError(f"{path}:{number}: expected 'token<TAB>tag', got {line!r}")
            if tag != tag.upper():
                repairs["tag_upper_cased"] += 1
                tag = tag.upper()
            current.append((token, tag))
    if current:
        sentences.append(current)
    return sentences, repairs


def _nlp_id_features() -> Callable[[list[str], int], dict[str, Any]]:
    """nlp-id's own feature function, so the fit sees the features its authors designed.

    ``PosTag()`` would download its fitted model in ``__init__``; the feature method needs no
    state, so an uninitialised instance serves it.
    """
    from nlp_id.postag import PosTag

    return PosTag.__new__(PosTag).features  # type: ignore[no-any-return]


def _featurize(
    sentences: Iterable[Tagged], features: Callable[[list[str], int], dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    labels: list[str] = []
    for sentence in sentences:
        tokens = [t for t, _ in sentence]
        rows.extend(features(tokens, i) for i in range(len(tokens)))
        labels.extend(tag for _, tag in sentence)
    return rows, labels


def fit_indonesian(corpus: Path) -> tuple[Any, dict[str, Any]]:
    """Fit hashed features + linear SVM on nine tenths of the sentences; accuracy on the rest.

    The accuracy is agreement with the corpus's own tags on unseen sentences, which measures how
    well the fit reproduces nlp-id's annotation, not accuracy on a gold treebank.
    """
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import Pipeline

    sentences, repairs = read_corpus(corpus)
    unique = list(dict.fromkeys(tuple(s) for s in sentences))  # a repeated sentence must not
    repairs["duplicate_sentences_dropped"] = len(sentences) - len(unique)  # sit on both sides
    sentences = [list(s) for s in unique]
    order = list(range(len(sentences)))
    random.Random(0).shuffle(order)
    cut = len(order) // 10
    heldout = [sentences[i] for i in sorted(order[:cut])]
    train = [sentences[i] for i in sorted(order[cut:])]
    features = _nlp_id_features()
    x_train, y_train = _featurize(train, features)
    x_test, y_test = _featurize(heldout, features)
    model = Pipeline([
        ("vectorize", FeatureHasher(n_features=2**18, alternate_sign=False)),
        ("classify", SGDClassifier(loss="hinge", alpha=1e-6, max_iter=5, tol=None,
                                   random_state=0, n_jobs=2)),
    ])  # fmt: skip
    model.fit(x_train, y_train)
    predicted = model.predict(x_test)
    correct = sum(int(p == y) for p, y in zip(predicted, y_test, strict=True))
    return model, {
        "corpus": f"nlp-id {_version('nlp-id')} nlp_id/data/dataset_postag.txt",
        "training": TRAINING_SPEC,
        "train_tokens": len(y_train),
        "heldout_tokens": len(y_test),
        "heldout_accuracy": correct / len(y_test),
        "repairs": repairs,
    }


def _cache_key(corpus: Path) -> str:
    digest = hashlib.sha256(corpus.read_bytes())
    for part in (TRAINING_SPEC, _version("nlp-id"), _version("scikit-learn")):
        digest.update(part.encode())
    return digest.hexdigest()[:16]


@contextmanager
def _fit_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks while another process fits
        yield
    finally:
        os.close(fd)


def _fit_into(corpus: Path, target: Path, sidecar: Path) -> None:
    """Fit and write model and notes beside each other, each through a temp file and a rename."""
    import joblib

    started = time.perf_counter()
    logger.info("fitting the Indonesian POS tagger on nlp-id's corpus (once) into %s", target)
    model, notes = fit_indonesian(corpus)
    suffix = f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = target.with_name(f".{target.name}{suffix}")
    joblib.dump(model, tmp)
    tmp.replace(target)
    tmp_side = sidecar.with_name(f".{sidecar.name}{suffix}")
    tmp_side.write_text(json.dumps(notes, indent=2), encoding="utf-8")
    tmp_side.replace(sidecar)
    logger.info(
        "Indonesian POS tagger fitted in %.0f s; agrees with held-out corpus tags on %.3f",
        time.perf_counter() - started, notes["heldout_accuracy"],
    )  # fmt: skip


@functools.cache
def _load_fitted(target: Path, stamp: tuple[int, int]) -> Any:
    """The fitted model, read once per process for each version of the file.

    Unpickling the model is about 1 CPU s; a process that builds the tagger more than once (an
    analysis that runs twice, the test workers) reads it once. ``stamp`` (mtime, size) keys a
    refitted file anew; the model is only ever used to predict, never changed.
    """
    import joblib

    return joblib.load(target)


def indonesian_tagger(cache_dir: Path) -> Tagger:
    """The Indonesian tagger, fitted on first use (about 15 s) and then loaded from the cache."""
    corpus = _nlp_id_corpus()
    target = cache_dir / f"pos-id-{_cache_key(corpus)}.joblib"
    sidecar = target.with_suffix(".json")
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _fit_lock(cache_dir / ".pos-id.lock"):  # parallel stages or test workers fit once
        if not (target.exists() and sidecar.exists()):
            _fit_into(corpus, target, sidecar)
    stamp = target.stat()
    model = _load_fitted(target, (stamp.st_mtime_ns, stamp.st_size))
    notes = json.loads(sidecar.read_text(encoding="utf-8"))
    from nlp_id.tokenizer import Tokenizer

    tokenizer = Tokenizer()
    features = _nlp_id_features()

    def tag(text: str) -> Tagged:
        tokens = [t for t in tokenizer.tokenize(text) if t.strip()]
        if not tokens:
            return []
        tags = model.predict([features(tokens, i) for i in range(len(tokens))])
        return list(zip(tokens, (str(t) for t in tags), strict=True))

    name = (
        f"nlp-id {_version('nlp-id')} tokenizer and features, linear SVM fitted by cultureqa on "
        "nlp-id's tagged news corpus"
    )
    return Tagger("id", name, tag, notes)


def count_classes(tagged: Sequence[tuple[str, str]], language: str) -> dict[str, int]:
    """Adjectives, nouns, verbs and proper nouns among ``tagged`` (groups: :data:`POS_GROUPS`)."""
    groups = POS_GROUPS[language]
    return {name: sum(1 for _, tag in tagged if tag in tags) for name, tags in groups.items()}
