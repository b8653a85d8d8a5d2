"""Give the keras-hub presets of tests/data/keras_hub their tokenizers, and record the golden token ids.

For each case a tiny transformers 5 tokenizer is made with the ``tokenizers`` / ``sentencepiece`` libraries from
a fixed text (BERT: a WordPiece vocabulary of real words; GPT-2: a byte-level BPE; Llama 3: a byte-level BPE with
Llama 3's split pattern and special tokens; Gemma: a SentencePiece BPE model trained as Gemma's is), saved with
``save_pretrained`` beside the golden ``config.json``; keras-hub's own transformers converter loads that directory
(``keras_hub.models.Tokenizer.from_preset(dir)``: the oracle) and saves the tokenizer into the preset
(``save_to_preset``: ``tokenizer.json`` and ``assets/tokenizer/...``; config.json, the weights and metadata.json
are left as they are). ``golden/tokens.json`` records the transformers tokenizer's ids on :data:`TEXTS` (with and
without its special tokens) and keras-hub's ids on the same texts, which must equal the transformers ones
without special tokens (checked here).

Run by ``make_presets.py`` for each case it makes, or alone on the existing presets (the weights and their
golden files untouched)::

    KERAS_BACKEND=torch /work/savedhub-venv/bin/python tests/data/keras_hub/generators/make_tokenizers.py [CASE...]

Deterministic: the vocabularies and models come from fixed texts by deterministic trainers (and string hashing
is fixed: :func:`fixed_hash_seed`).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "torch")

HERE = Path(__file__).resolve().parent.parent

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A keras model saved as a preset can be served with its tokenizer.",
    "Words, pieces and tokens: the model reads them all!",
    "Hello world, hello there; the end of the story.",
    "She sells sea shells by the sea shore, and the shells she sells are surely sea shells.",
    "Peter Piper picked a peck of pickled peppers.",
    "How much wood would a woodchuck chuck if a woodchuck could chuck wood?",
    "It was the best of times, it was the worst of times.",
    "To be or not to be, that is the question.",
]
"""What the BPE and SentencePiece tokenizers are trained on."""

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello world! A model reads the tokens, the pieces and the words.",
    "she sells sea shells; peter picked peppers?",
    "The   END of times  is not the question",
]
"""The fixed texts whose ids the golden file records (characters of :data:`CORPUS` only: a byte-level BPE
without its 256-byte alphabet has no token for an unseen character)."""

KERAS_HUB_ONLY = {"bert": ["Th\u00e9 quick d\u00f6g IS lazy"]}
"""Texts on which keras-hub's tokenizer and the transformers one it came from differ, with keras-hub's ids alone
recorded (``keras_hub_only``): keras-hub's converter carries BERT's ``do_lower_case`` but not the accent stripping
that comes with it in transformers, so keras-hub keeps ``é`` (an unknown word here) where transformers makes it
``e``; ckpt writes the tokenizer keras-hub's model was tuned with."""

BERT_WORDS = """the a an of to and is it was be or not that fox dog brown quick lazy jump over hello world model
read token piece word end time best worst question she sell sea shell by shore peter pick pepper wood how much
would could if are all can with its as this story there here keras serve""".split()
BERT_PIECES = ["##s", "##ed", "##er", "##ing", "##ly", "##est", "##ch", "##le", "##y", "##en"]
BERT_MARKS = list(".,;:!?'-")


def _bert_vocab() -> list[str]:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *BERT_MARKS, *BERT_WORDS, *BERT_PIECES]
    letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in vocab]
    vocab += letters[:99 - len(vocab)]
    assert len(vocab) == 99 and len(set(vocab)) == 99, (len(vocab), len(set(vocab)))
    return vocab


def _bert(work: Path):
    import transformers

    (work / "vocab.txt").write_text("".join(f"{t}\n" for t in _bert_vocab()))
    (work / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    tok = transformers.BertTokenizer.from_pretrained(str(work))
    return tok, ["vocab.txt"]


def _bpe_files(vocab: dict[str, int], merges: list[list[str]], work: Path) -> None:
    (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    (work / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


def _trained_bpe(size: int, special: list[str], pre_tokenizer) -> tuple[dict[str, int], list[list[str]]]:
    from tokenizers import Tokenizer, models, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=special, show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer)
    model = json.loads(tok.to_str())["model"]
    assert len(model["vocab"]) == size, len(model["vocab"])
    return model["vocab"], [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]


def _gpt2(work: Path):
    import transformers
    from tokenizers import pre_tokenizers

    vocab, merges = _trained_bpe(98, [], pre_tokenizers.ByteLevel(add_prefix_space=False))
    vocab["<|endoftext|>"] = 98  # GPT-2's end of text is its last id, as in the released vocabulary
    _bpe_files(vocab, merges, work)
    tok = transformers.GPT2Tokenizer.from_pretrained(str(work))
    return tok, ["vocab.json", "merges.txt"]


LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
"""Llama 3's pre-tokenizer pattern (its tokenizer.json)."""


def _llama3(work: Path):
    import transformers
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    pre = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated"),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    special = ["<|eot_id|>", "<|begin_of_text|>", "<|end_of_text|>"]  # ids 0, 1, 2: the config's bos 1, eos 2
    vocab, merges = _trained_bpe(99, special, pre)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges], ignore_merges=True))
    tok.add_special_tokens(special)
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", 1)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>",
                                                eos_token="<|end_of_text|>")
    return fast, []


def _gemma(work: Path):
    import sentencepiece as spm
    import transformers

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 4), model_writer=buf, vocab_size=99, model_type="bpe",
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", character_coverage=1.0, normalization_rule_name="identity", add_dummy_prefix=False,
        remove_extra_whitespaces=False, split_digits=True, byte_fallback=False, minloglevel=2, num_threads=1)
    (work / "tokenizer.model").write_bytes(buf.getvalue())
    tok = transformers.GemmaTokenizer.from_pretrained(str(work), add_bos_token=True)  # as Gemma's own
    return tok, ["tokenizer.model"]


MAKERS = {"bert": _bert, "gpt2": _gpt2, "gemma": _gemma, "llama": _llama3, "llama_tied": _llama3}

LLAMA2 = "llama2_tokenizer"
"""A keras-hub ``LlamaTokenizer`` (Llama 2's SentencePiece BPE, a dummy prefix) alone: keras-hub converts every
transformers Llama to ``Llama3Backbone``, so no preset of its own; the tests put it into the ``llama`` preset."""


NFKC = "nfkc_tokenizer"
"""A keras-hub ``GemmaTokenizer`` of a SentencePiece model with sentencepiece's default normalization (``nmt_nfkc``,
extra whitespace removed, a dummy prefix), alone like :data:`LLAMA2`: transformers has no class that normalizes so,
so the oracle is keras-hub's tokenizer itself (sentencepiece), its ids with the model's ``bos`` first."""

NFKC_TEXTS = ["\ufb01ne \uff21\uff22\uff23 fox", "  the   lazy  dog  ", "Hello\u00a0world \u2460 end"]
"""Texts its normalization changes: a ligature, full-width letters, a circled digit, runs of spaces, a no-break
space."""


def add_nfkc_tokenizer(work: Path) -> None:
    """The NFKC SentencePiece model saved as a keras-hub ``GemmaTokenizer``; ``golden/tokens.json`` holds keras-hub's
    ids (sentencepiece's, checked) on :data:`TEXTS` and :data:`NFKC_TEXTS`, and with ``bos`` first."""
    import keras_hub
    import sentencepiece as spm

    __import__("keras").backend.clear_session()
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 4), model_writer=buf, vocab_size=99, model_type="bpe",
        pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>",
        unk_piece="<unk>", character_coverage=1.0, byte_fallback=False, minloglevel=2, num_threads=1)
    proto = buf.getvalue()
    keras_tok = keras_hub.models.GemmaTokenizer(proto=proto)
    processor = spm.SentencePieceProcessor(model_proto=proto)
    out = HERE / NFKC
    shutil.rmtree(out, ignore_errors=True)
    keras_tok.save_to_preset(str(out / "preset"))
    texts = [*TEXTS, *NFKC_TEXTS]
    keras_ids = [[int(i) for i in keras_tok(t)] for t in texts]
    assert keras_ids == [processor.encode(t) for t in texts]
    record = {"texts": texts, "input_ids": [[2, *ids] for ids in keras_ids],
              "input_ids_without_special_tokens": keras_ids, "keras_hub_ids": keras_ids,
              "keras_hub_class": type(keras_tok).__name__, "sentencepiece": spm.__version__,
              "keras_hub": keras_hub.__version__,
              "how": "keras_hub.models.GemmaTokenizer(proto=the model).save_to_preset(preset); its ids, bos (2) first"}
    (out / "golden").mkdir(parents=True)
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in record.items()]
    (out / "golden" / "tokens.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(NFKC, "->", out)


def _spm_llama2() -> bytes:
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 4), model_writer=buf, vocab_size=99, model_type="bpe",
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, character_coverage=1.0, normalization_rule_name="identity",
        add_dummy_prefix=True, remove_extra_whitespaces=False, split_digits=True, byte_fallback=False,
        minloglevel=2, num_threads=1)
    return buf.getvalue()


def add_llama2_tokenizer(work: Path) -> None:
    """Llama 2's tokenizer: transformers 5's ``LlamaTokenizer`` from the SentencePiece model (the golden ids) and
    keras-hub's ``LlamaTokenizer`` of the same model (its ids must equal them) saved as a preset's tokenizer."""
    import keras_hub
    import transformers

    __import__("keras").backend.clear_session()
    raw, out = work / "llama2_raw", HERE / LLAMA2
    raw.mkdir(parents=True, exist_ok=True)
    proto = _spm_llama2()
    (raw / "tokenizer.model").write_bytes(proto)
    tok = transformers.LlamaTokenizer.from_pretrained(str(raw), add_bos_token=True)  # as Llama 2's own
    keras_tok = keras_hub.models.LlamaTokenizer(proto=proto)
    shutil.rmtree(out, ignore_errors=True)
    keras_tok.save_to_preset(str(out / "preset"))
    _golden(tok, keras_tok, out / "golden", "keras_hub.models.LlamaTokenizer(proto=the SentencePiece model)"
            ".save_to_preset(preset); transformers.LlamaTokenizer.from_pretrained(dir with tokenizer.model)",
            [*TEXTS[:3], TEXTS[3].replace("END", "end")])  # no byte fallback in 99 pieces: unknown characters
    # are dropped by transformers 5's BPE and <unk> to sentencepiece (Llama 2's own model has byte pieces)
    print(LLAMA2, "->", out)


def add_tokenizer(case: str, work: Path) -> None:
    """Make the case's transformers tokenizer, load it into keras-hub, save it into the preset, write the golden
    ids."""
    import keras_hub

    __import__("keras").backend.clear_session()  # each tokenizer's Keras name its own ("llama3_tokenizer", not "_1")
    hf_dir, raw = work / f"{case}_hf", work / f"{case}_raw"
    for d in (hf_dir, raw):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    golden, preset = HERE / case / "golden", HERE / case / "preset"
    tok, files = MAKERS[case](raw)
    tok.save_pretrained(str(hf_dir))
    for name in files:  # keras-hub's converters read the original files (vocab.txt, tokenizer.model, ...)
        shutil.copy(raw / name, hf_dir / name)
    shutil.copy(golden / "config.json", hf_dir / "config.json")
    keras_tok = keras_hub.models.Tokenizer.from_preset(str(hf_dir))
    _golden(tok, keras_tok, golden)
    for sub in ("tokenizer.json", "assets"):
        path = preset / sub
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    keras_tok.save_to_preset(str(preset))
    print(case, "tokenizer ->", preset, type(keras_tok).__name__)


HOW = "keras_hub.models.Tokenizer.from_preset(save_pretrained dir).save_to_preset(preset)"


def _golden(tok, keras_tok, golden: Path, how: str = HOW, texts: list[str] = TEXTS) -> None:
    """``golden/tokens.json``: the transformers tokenizer's ids on :data:`TEXTS` and keras-hub's (checked equal)."""
    import keras_hub
    import transformers

    golden.mkdir(parents=True, exist_ok=True)
    with_special = [tok(t)["input_ids"] for t in texts]
    plain = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    keras_ids = [[int(i) for i in keras_tok(t)] for t in texts]
    assert keras_ids == plain, (golden, keras_ids, plain)
    record = {"texts": texts, "input_ids": with_special, "input_ids_without_special_tokens": plain,
              "keras_hub_ids": keras_ids, "transformers_class": type(tok).__name__,
              "keras_hub_class": type(keras_tok).__name__, "transformers": transformers.__version__,
              "keras_hub": keras_hub.__version__,
              "how": how}
    only = KERAS_HUB_ONLY.get(golden.parent.name, [])
    if only:
        record["keras_hub_only"] = {"texts": only, "keras_hub_ids": [[int(i) for i in keras_tok(t)] for t in only],
                                    "transformers_ids": [tok(t, add_special_tokens=False)["input_ids"] for t in only]}
        assert record["keras_hub_only"]["keras_hub_ids"] != record["keras_hub_only"]["transformers_ids"]
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in record.items()]
    (golden / "tokens.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")


def fixed_hash_seed() -> None:
    """Run again with ``PYTHONHASHSEED=0``: keras-hub's Llama 3 tokenizer writes its special tokens in a set's
    order, which string hashing otherwise changes from run to run."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})


def main() -> None:
    fixed_hash_seed()
    with tempfile.TemporaryDirectory() as work:
        for case in sys.argv[1:] or [*MAKERS, LLAMA2, NFKC]:
            if case == LLAMA2:
                add_llama2_tokenizer(Path(work))
            elif case == NFKC:
                add_nfkc_tokenizer(Path(work))
            else:
                add_tokenizer(case, Path(work))


if __name__ == "__main__":
    main()
