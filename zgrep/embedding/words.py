"""Token ids of many texts at once for a tokenizer that splits words as BERT does: each distinct
word is tokenized once, by the tokenizer's model alone, and a text becomes an array of word
numbers (the tokenizer's model sees each pre-tokenized word on its own, so the ids are the same).

A character outside ASCII is split as the tokenizer's own pre-tokenizer splits it: each new one is
put to that pre-tokenizer once (punctuation, whitespace or part of a word), so the split holds for
whatever Unicode version the tokenizer was built with."""

from __future__ import annotations

import re
import threading
from itertools import chain

import numpy as np
from tokenizers import Tokenizer, pre_tokenizers

# BertPreTokenizer on ASCII text: Rust's whitespace splits and is dropped, ASCII punctuation is a
# word of its own, every other character (letters, digits, controls) belongs to a word
_ASCII_WORD = re.compile(r"[^\t\n\x0b\x0c\r !-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]")
MAX_WORDS = 500_000  # distinct words remembered; past this the memory starts afresh


class WordTokens:
    """Token ids of normalised texts, word by word, with the tokenizer's truncation."""

    def __init__(self, tokenizer: Tokenizer, max_length: int | None) -> None:
        self.model_only = Tokenizer.from_str(tokenizer.to_str())
        self.model_only.normalizer = None
        self.model_only.pre_tokenizer = None
        self.model_only.no_truncation()
        self.model_only.no_padding()
        self.pre_tokenizer = tokenizer.pre_tokenizer
        self.max_length = max_length
        # the characters whose place in the split is known (ASCII's by _ASCII_WORD), and the
        # non-ASCII ones the pre-tokenizer calls punctuation or whitespace
        self.known = {chr(n) for n in range(128)}
        self.punctuation: list[str] = []
        self.whitespace: list[str] = []
        self.split = _ASCII_WORD
        # one model serves every thread of a daemon: learning and reading the word tables is one step
        self._lock = threading.Lock()
        self.index: dict[str, int] = {}  # word -> its number
        self.starts = self.sizes = self.pieces = np.zeros(0, dtype=np.int64)
        self._forget()

    @staticmethod
    def applies(tokenizer: Tokenizer) -> bool:
        """Whether the tokenizer pre-tokenizes as BertPreTokenizer does (the split this mimics)."""
        return isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer)

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(ids of all texts concatenated, each text's token count) for normalised texts holding
        no added token, truncated at max_length tokens each."""
        with self._lock:
            words_per_text = []
            for text in texts:
                if not text.isascii():
                    self._learn_characters(text)
                words_per_text.append(self.split.findall(text))
            return self._token_ids(words_per_text)

    def _learn_characters(self, text: str) -> None:
        """Put the characters of `text` not met before to the pre-tokenizer, and widen the split by
        those it calls punctuation or whitespace (the caller holds the lock)."""
        new = set(text).difference(self.known)
        if not new:
            return
        self.known |= new
        separators = len(self.punctuation) + len(self.whitespace)
        for char in new:
            pieces = len(self.pre_tokenizer.pre_tokenize_str(f"a{char}a"))
            {3: self.punctuation, 2: self.whitespace}.get(pieces, []).append(char)
        if len(self.punctuation) + len(self.whitespace) == separators:
            return
        punctuation = re.escape("".join(self.punctuation))
        blank = re.escape("".join(self.whitespace))
        self.split = re.compile(
            rf"[^\t\n\x0b\x0c\r !-/:-@\[-`{{-~{punctuation}{blank}]+|[!-/:-@\[-`{{-~{punctuation}]"
        )

    def _token_ids(self, words_per_text: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """token_ids of texts split into words (the caller holds the lock)."""
        self._learn(set().union(*words_per_text))
        counts = np.fromiter(map(len, words_per_text), dtype=np.int64, count=len(words_per_text))
        words = np.fromiter(
            map(self.index.__getitem__, chain.from_iterable(words_per_text)),
            dtype=np.int64,
            count=int(counts.sum()),
        )
        take = self.sizes[words]
        ends = np.cumsum(counts)
        if self.max_length is not None:
            before = np.cumsum(take) - take  # tokens before each word, all texts together
            text_start = np.repeat(np.concatenate((before, [0]))[ends - counts], counts)
            take = np.clip(self.max_length - (before - text_start), 0, take)
        taken = np.concatenate(([0], np.cumsum(take)))
        positions = np.repeat(self.starts[words] - taken[:-1], take) + np.arange(taken[-1])
        return self.pieces[positions], taken[ends] - taken[ends - counts]

    def _learn(self, seen: set[str]) -> None:
        """Tokenize the words in `seen` not met before, in one batch."""
        new = sorted(seen.difference(self.index))
        if not new:
            return
        if len(self.index) + len(new) > MAX_WORDS:
            self._forget()
            new = sorted(seen)
        ids = [e.ids for e in self.model_only.encode_batch_fast(new, add_special_tokens=False)]
        sizes = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        self.starts = np.concatenate((self.starts, len(self.pieces) + np.cumsum(sizes) - sizes))
        self.sizes = np.concatenate((self.sizes, sizes))
        pieces = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(sizes.sum()))
        self.pieces = np.concatenate((self.pieces, pieces))
        self.index.update(zip(new, range(len(self.index), len(self.index) + len(new))))

    def _forget(self) -> None:
        """No words known."""
        self.index = {}
        self.starts = np.zeros(0, dtype=np.int64)  # each word's first piece in `pieces`
        self.sizes = np.zeros(0, dtype=np.int64)  # each word's token count
        self.pieces = np.zeros(0, dtype=np.int64)
