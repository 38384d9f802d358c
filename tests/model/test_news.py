"""The news word of a message between node neighbours (grapeshot.model.news)."""

import time

import numpy as np
from numba import njit

from grapeshot.model.clock import wall_ns
from grapeshot.model.news import HEADER, NEWS, SENT, news_of, observed, publish, put_word
from grapeshot.runtime.wire import payload, read_header, write_header


def test_a_published_word_is_observed_at_its_byte_offset_alone():
    raw = np.zeros(HEADER * 8 + 16, dtype=np.uint8)
    publish(raw, NEWS * 8, news_of(41))
    assert observed(raw, NEWS * 8) == 42
    words = raw.view(np.int64)
    assert words[NEWS] == 42 and np.count_nonzero(words) == 1


def test_a_float64_outbox_takes_integer_words_bit_for_bit():
    outbox = np.full(HEADER + 2, 1.5)
    put_word(outbox, SENT * 8, -7)
    publish(outbox, NEWS * 8, 1 << 62)
    assert outbox.view(np.int64)[SENT] == -7
    assert observed(outbox, NEWS * 8) == 1 << 62
    assert (outbox[[0, 1, 2, 4, 6, 7]] == 1.5).all()


def test_no_round_has_the_news_a_zeroed_region_holds_and_rounds_differ():
    steps = np.arange(0, 1000)
    news = np.array([news_of(int(s)) for s in steps])
    assert (news != 0).all() and (np.diff(news) > 0).all()


def test_the_wall_clock_is_pythons_time_ns():
    before = time.time_ns()
    now = wall_ns()
    after = time.time_ns()
    assert before <= now <= after


def test_compiled_code_and_python_read_one_word():
    @njit
    def wait_and_read(raw, token):
        while observed(raw, NEWS * 8) != token:
            pass
        return raw[HEADER * 8]

    raw = np.zeros(HEADER * 8 + 8, dtype=np.uint8)
    publish(raw, NEWS * 8, news_of(1))  # round 1's, in this slot before
    payload(raw)[0] = 9
    write_header(raw, 3, 1, 1)
    assert observed(raw, NEWS * 8) == news_of(1)  # the header is written, not its news
    publish(raw, NEWS * 8, news_of(3))
    assert wait_and_read(raw, news_of(3)) == 9
    assert read_header(raw).round == (3, 1, 1)
