"""Tokenizers carried into a transformers 5 model directory: a keras-hub preset's (:mod:`.keras_hub`), written as
transformers' own files, with the ``tokenizer.json`` documents (:mod:`.documents`) that need no sentencepiece, read
from a SentencePiece model without it (:mod:`.spm`)."""
