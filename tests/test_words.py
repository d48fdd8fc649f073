"""The word splitter (accapp.words): one definition of a word for every model family."""

from __future__ import annotations

import pytest

from accapp.words import assign_words, is_cjk, split_words, word_spans


def texts(s: str) -> list[str]:
    return [w.text for w in split_words(s)]


@pytest.mark.parametrize(
    "sentence, expected",
    [
        ("These casseroles disgust Kayla.", ["These", "casseroles", "disgust", "Kayla", "."]),
        ("I don't know.", ["I", "don't", "know", "."]),
        ("Kayla's dog barked.", ["Kayla's", "dog", "barked", "."]),
        ("Kayla\u2019s dog", ["Kayla\u2019s", "dog"]),  # typographic apostrophe
        ("They sold 3,000 books.", ["They", "sold", "3,000", "books", "."]),
        ("It costs 3.50, not 45.", ["It", "costs", "3.50", ",", "not", "45", "."]),
        ("a well-known COVID-19 case", ["a", "well-known", "COVID-19", "case"]),
        ("the students' books", ["the", "students", "'", "books"]),  # trailing apostrophe: punctuation
        ("'em -3 --", ["'", "em", "-", "3", "-", "-"]),
        ("Wait... what?!", ["Wait", ".", ".", ".", "what", "?", "!"]),
        ("(e.g. this)", ["(", "e", ".", "g", ".", "this", ")"]),
        ("He said \"no\".", ["He", "said", '"', "no", '"', "."]),
        ("3rd place, 1990s", ["3rd", "place", ",", "1990s"]),
        ("a, b", ["a", ",", "b"]),  # comma between letters does not join
        ("1, 2", ["1", ",", "2"]),  # nor a comma followed by a space
        ("naïve café", ["naïve", "café"]),
        ("nai\u0308ve", ["nai\u0308ve"]),  # combining diaeresis stays in the word
        ("他们喜欢这本书。", ["他", "们", "喜", "欢", "这", "本", "书", "。"]),
        ("我看了3,000本书，对吗？", ["我", "看", "了", "3,000", "本", "书", "，", "对", "吗", "？"]),
        ("A股上涨", ["A", "股", "上", "涨"]),
        ("ひらがなカタカナ", list("ひらがなカタカナ")),
        ("한국어 문장", ["한국어", "문장"]),  # Hangul: space-delimited words
        ("x\u200by", ["x", "y"]),  # zero-width space separates, belongs to no word
        ("  padded  ", ["padded"]),
        ("", []),
    ],
)
def test_split_words(sentence, expected):
    assert texts(sentence) == expected


def test_spans_index_the_raw_string():
    s = "  I don't  know, 3,000 of 他们. "
    words = split_words(s)
    assert [w.index for w in words] == list(range(len(words)))
    for w in words:
        assert s[w.start : w.end] == w.text
        assert not any(ch.isspace() for ch in w.text)
    spans = word_spans(s)
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))


def test_is_cjk():
    assert is_cjk("书") and is_cjk("カ") and is_cjk("\U00020000")
    assert not is_cjk("a") and not is_cjk("。") and not is_cjk("한")


def test_assign_words_by_overlap():
    s = "Kayla's souvenir."
    spans = word_spans(s)  # Kayla's, souvenir, .
    # BERT-like pieces: K ##ay ##la ' s so ##uven ##ir .
    offsets = [(0, 1), (1, 3), (3, 5), (5, 6), (6, 7), (8, 10), (10, 14), (14, 16), (16, 17)]
    assert assign_words(offsets, spans) == [0, 0, 0, 0, 0, 1, 1, 1, 2]
    # byte-level-like pieces whose offsets include the leading space
    offsets = [(0, 5), (5, 7), (7, 10), (10, 16), (16, 17)]
    assert assign_words(offsets, spans) == [0, 0, 1, 1, 2]


def test_assign_words_boundary_tokens():
    s = 'no."'
    spans = word_spans(s)  # no . "
    assert [s[a:b] for a, b in spans] == ["no", ".", '"']
    # a piece '."' overlaps two words equally: the leftmost wins; '"' owns no token
    assert assign_words([(0, 2), (2, 4)], spans) == [0, 1]
    # a piece "o." overlaps "no" by one character and "." by one: leftmost
    assert assign_words([(0, 1), (1, 3), (3, 4)], spans) == [0, 0, 2]
    # most characters wins
    s2 = "ab.cd"
    spans2 = word_spans(s2)
    assert [s2[a:b] for a, b in spans2] == ["ab", ".", "cd"]
    assert assign_words([(0, 1), (1, 3), (3, 5)], spans2) == [0, 0, 2]


def test_assign_words_whitespace_and_empty_tokens():
    s = "a  b c"
    spans = word_spans(s)
    # "Ġ" with an empty offset or covering only a space joins the next token's word
    assert assign_words([(0, 1), (2, 2), (3, 4), (4, 5), (5, 6)], spans) == [0, 1, 1, 2, 2]
    assert assign_words([(0, 1), (1, 2), (3, 4)], spans) == [0, 1, 1]
    # a trailing one joins the previous word
    assert assign_words([(0, 1), (6, 6)], spans) == [0, 0]
    assert assign_words([], spans) == []


def test_assign_words_byte_pieces_of_a_character():
    s = "他们"
    spans = word_spans(s)
    offsets = [(0, 1)] * 3 + [(1, 2)] * 3
    assert assign_words(offsets, spans) == [0, 0, 0, 1, 1, 1]
    # as the causal scorer passes them (disjoint_offsets): the 2nd and 3rd byte pieces empty at
    # the end of their character, SmolLM2's real split of "他们走了。" -> 他 他 们 们 走 走 走 了 。
    real = [(0, 1), (1, 1), (1, 2), (2, 2), (2, 3), (3, 3), (3, 3), (3, 4), (4, 5)]
    assert assign_words(real, word_spans("他们走了。")) == [0, 0, 1, 1, 2, 2, 2, 3, 4]


@pytest.mark.parametrize("which", ["wordpiece", "bytelevel"])
def test_real_tokenizers_put_every_token_in_an_overlapping_word(which):
    from masked_fixtures import bytelevel_tokenizer, wordpiece_tokenizer

    tok = wordpiece_tokenizer() if which == "wordpiece" else bytelevel_tokenizer()
    for s in ["I don't think Kayla's friends bought 3,000 souvenirs.", "Who should Derek hug?", "我看了三千本书，对吗？"]:
        enc = tok(s, add_special_tokens=False, return_offsets_mapping=True)
        words = split_words(s)
        owner = assign_words(enc["offset_mapping"], [(w.start, w.end) for w in words])
        assert len(owner) == len(enc["input_ids"])
        for (a, b), w in zip(enc["offset_mapping"], owner):
            chars = [i for i in range(a, b) if not s[i].isspace()]
            if chars:
                assert words[w].start <= chars[0] < words[w].end
        # every word owns at least one token here, and a word's tokens are contiguous
        assert sorted(set(owner)) == list(range(len(words)))
        assert owner == sorted(owner)


def test_is_cjk_is_membership_in_the_ranges():
    """is_cjk finds a character's range by bisection: the same answer as testing every range, for every
    code point up to the last range's end."""
    from accapp.words import _CJK_RANGES, is_cjk

    last = _CJK_RANGES[-1][1] + 2
    for cp in range(last):
        assert is_cjk(chr(cp)) == any(lo <= cp <= hi for lo, hi in _CJK_RANGES), hex(cp)
