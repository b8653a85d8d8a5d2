"""The architectures of tests/data/hf_h5: one tiny random config per case, the transformers 4.x TF class that
writes its tf_model.h5, and the inputs it runs on. Read by make_h5_zoo.py (oracle venv).

Each case: model_type, config class and keyword arguments (tiny: hidden <= 32, 2 layers, vocab 99, images 32x32),
TF class (the PyTorch class is the same name without "TF": what from_tf=True instantiates), task, and the input
kind (see make_h5_zoo.inputs_for): text, text+types (token_type_ids), seq2seq, image, audio, ...
"""
from __future__ import annotations

V = 99  # vocabulary
TEXT = {"vocab_size": V, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 37, "max_position_embeddings": 64}
BART = {"vocab_size": V, "d_model": 32, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4,
        "decoder_attention_heads": 4, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "max_position_embeddings": 64,
        "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "decoder_start_token_id": 2}
T5 = {"vocab_size": V, "d_model": 32, "d_kv": 8, "d_ff": 37, "num_layers": 2, "num_heads": 4,
      "relative_attention_num_buckets": 8, "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1}
VIT = {"image_size": 32, "patch_size": 8, "num_channels": 3, "hidden_size": 32, "num_hidden_layers": 2,
       "num_attention_heads": 4, "intermediate_size": 37}
LABELS = {"num_labels": 3}
AUDIO = {"vocab_size": 12, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
         "intermediate_size": 37, "conv_dim": (8, 8), "conv_stride": (5, 2), "conv_kernel": (10, 3),
         "num_conv_pos_embeddings": 16, "num_conv_pos_embedding_groups": 2, "do_stable_layer_norm": False}


def case(model_type: str, config: str, kwargs: dict, tf_class: str, task: str, kind: str, **extra) -> dict:
    return {"model_type": model_type, "config_class": config, "config": kwargs, "tf_class": tf_class,
            "pt_class": tf_class[2:], "task": task, "inputs": kind, **extra}


# in order of value (the hub's most held tf_model.h5 first)
CASES: dict[str, dict] = {
    "bert": case("bert", "BertConfig", TEXT, "TFBertModel", "feature-extraction", "text+types", tokenizer="bert"),
    "bert_seqcls": case("bert", "BertConfig", {**TEXT, **LABELS}, "TFBertForSequenceClassification",
                        "text-classification", "text+types", tokenizer="bert"),
    "bert_qa": case("bert", "BertConfig", TEXT, "TFBertForQuestionAnswering", "question-answering", "text+types",
                    tokenizer="bert"),
    "bert_mlm": case("bert", "BertConfig", TEXT, "TFBertForMaskedLM", "fill-mask", "text+types", tokenizer="bert"),
    "gpt2": case("gpt2", "GPT2Config", {"vocab_size": V, "n_positions": 64, "n_embd": 32, "n_layer": 2,
                                         "n_head": 4, "bos_token_id": 0, "eos_token_id": 0},
                 "TFGPT2LMHeadModel", "text-generation", "causal", tokenizer="gpt2"),
    "t5": case("t5", "T5Config", T5, "TFT5ForConditionalGeneration", "text2text-generation", "seq2seq"),
    "mt5": case("mt5", "MT5Config", {**T5, "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False},
                "TFMT5ForConditionalGeneration", "text2text-generation", "seq2seq"),
    "roberta": case("roberta", "RobertaConfig", {**TEXT, "max_position_embeddings": 66, "type_vocab_size": 1,
                                                 "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2},
                    "TFRobertaForMaskedLM", "fill-mask", "text", tokenizer="roberta"),
    "xlm_roberta": case("xlm-roberta", "XLMRobertaConfig",
                        {**TEXT, **LABELS, "max_position_embeddings": 66, "type_vocab_size": 1, "pad_token_id": 1},
                        "TFXLMRobertaForTokenClassification", "token-classification", "text"),
    "distilbert": case("distilbert", "DistilBertConfig",
                       {"vocab_size": V, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 37,
                        "max_position_embeddings": 64}, "TFDistilBertModel", "feature-extraction", "text",
                       tokenizer="bert"),
    "distilbert_seqcls": case("distilbert", "DistilBertConfig",
                              {"vocab_size": V, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 37,
                               "max_position_embeddings": 64, **LABELS},
                              "TFDistilBertForSequenceClassification", "text-classification", "text"),
    "albert": case("albert", "AlbertConfig", {**TEXT, "embedding_size": 16}, "TFAlbertForMaskedLM", "fill-mask",
                   "text+types"),
    "electra": case("electra", "ElectraConfig", {**TEXT, "embedding_size": 16}, "TFElectraForPreTraining",
                    "pretraining", "text+types"),
    "bart": case("bart", "BartConfig", BART, "TFBartForConditionalGeneration", "text2text-generation", "seq2seq"),
    "vit": case("vit", "ViTConfig", {**VIT, **LABELS}, "TFViTForImageClassification", "image-classification",
                "image"),
}
