"""Tiny tokenizers saved next to some tf_model.h5 cases (so a converter can be tested copying them): a BERT
WordPiece vocab.txt and a byte-level BPE (vocab.json + merges.txt) for GPT-2 and RoBERTa, each with at most the
model's 99 ids, built from a fixed word list (deterministic)."""
from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

import transformers

TEXT = ("the quick brown fox jumps over the lazy dog . a tiny model reads the test data and the converter "
        "writes the same weights , then the other model loads them and says the answer is the same . "
        "hello world , this is a test of the tiny tokenizer for the zoo")


def bert_vocab(size: int) -> list[str]:
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    for w in TEXT.split():
        if w not in words:
            words.append(w)
    for c in "abcdefghijklmnopqrstuvwxyz":
        if len(words) < size:
            words.append("##" + c)
    return words[:size]


def bpe(specials: list[str], size: int) -> tuple[dict[str, int], list[str]]:
    """A byte-level BPE learnt on TEXT (GPT-2's byte-to-unicode map: space is 'Ġ', letters are themselves)."""
    words = Counter(("Ġ" + w if i else w) for i, w in enumerate(TEXT.split()))
    seqs = {w: list(w) for w in words}
    vocab = list(specials) + sorted({c for w in seqs.values() for c in w})
    merges: list[str] = []
    while len(vocab) < size:
        pairs: Counter = Counter()
        for w, s in seqs.items():
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += words[w]
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append(f"{a} {b}")
        vocab.append(a + b)
        for w, s in seqs.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return {t: i for i, t in enumerate(vocab)}, merges


def save_tokenizer(kind: str, directory: Path, config: transformers.PretrainedConfig) -> None:
    """Write the tokenizer files of ``kind`` ("bert", "gpt2", "roberta") into ``directory``."""
    size = config.vocab_size
    with tempfile.TemporaryDirectory() as tmp:
        if kind == "bert":
            (Path(tmp) / "vocab.txt").write_text("\n".join(bert_vocab(size)) + "\n")
            tok = transformers.BertTokenizerFast(vocab_file=str(Path(tmp) / "vocab.txt"), do_lower_case=True,
                                                 model_max_length=config.max_position_embeddings)
        else:
            specials = ["<|endoftext|>"] if kind == "gpt2" else ["<s>", "<pad>", "</s>", "<unk>"]
            vocab, merges = bpe(specials, size - (kind == "roberta"))
            if kind == "roberta":
                vocab["<mask>"] = len(vocab)
            (Path(tmp) / "vocab.json").write_text(json.dumps(vocab))
            (Path(tmp) / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
            cls = transformers.GPT2TokenizerFast if kind == "gpt2" else transformers.RobertaTokenizerFast
            tok = cls(vocab_file=str(Path(tmp) / "vocab.json"), merges_file=str(Path(tmp) / "merges.txt"),
                      model_max_length=64)
        tok.save_pretrained(str(directory))
