"""``ckpt report``: one checkpoint, a pair or a run drawn as data (:mod:`.model`, :mod:`.build`) and as one
self-contained HTML page (:mod:`.html`); past 1,000 tensors a summary of bounded size (:mod:`.summary`: one
scan of every tensor, :mod:`.scan`; groups and packed keys, :mod:`.digest`; its page, :mod:`.summary_html`)."""
