"""Model maps: TensorFlow checkpoints of published model families (BERT, ALBERT, ELECTRA, GPT-2, T5) as the
directories transformers opens (``ckpt convert --to hf``), and back (``--to tf-name --family F``).

A family is a data file (``families/<name>.toml``, :mod:`.family`): its rename rules, the transforms of each
tensor, the named drops, the target class's parameters with their shapes in terms of the configuration, and
the translation of the original configuration file into ``config.json`` (:mod:`.config`). :mod:`.plan` plans a
conversion from them; :mod:`.entries` computes the transformed tensors as they stream.
"""
