"""lancer.tokenize against pylance 14's lance.tokenize: the same tokens and positions
for the analyzer settings INVERTED indexes take (stop words, stemming, folding,
languages, n-grams, token length limits, empty text), the same error kinds for bad
settings."""

import pytest

import lance
import lancer

CASES = [
    ("the Cats and Dogs, running quickly", {}),
    ("the Cats and Dogs", {"stem": False, "remove_stop_words": False}),
    ("Über café naïve résumé", {}),
    ("Über café", {"ascii_folding": False}),
    ("hello world", {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 3}),
    ("hello world", {"base_tokenizer": "ngram", "min_ngram_length": 2, "max_ngram_length": 3, "prefix_only": True}),
    ("a" * 50 + " short", {}),
    ("a" * 50 + " short", {"max_token_length": None}),
    ("", {}),
    ("the the the", {}),
    ("le chat mange les souris", {"language": "French"}),
    ("the x the", {"custom_stop_words": ["x"]}),
    ("Hello World", {"lower_case": False}),
    ("one two\tthree", {"base_tokenizer": "whitespace"}),
    ("x", {"language": "Klingon"}),
    ("x", {"base_tokenizer": "nope"}),
    ("x", {"nope": 1}),
]


def tokens(lib, text, kw):
    try:
        return [(t.text, t.position) for t in lib.tokenize(text, **kw)]
    except Exception as e:  # noqa: BLE001 - the kind is the answer
        return e


@pytest.mark.parametrize("text,kw", CASES)
def test_tokenize_matches_pylance(text, kw):
    want, got = tokens(lance, text, kw), tokens(lancer, text, kw)
    if isinstance(want, Exception):
        kind = next(k for k in (TypeError, ValueError, Exception) if isinstance(want, k))
        assert isinstance(got, kind), (got, want)
    else:
        assert got == want
