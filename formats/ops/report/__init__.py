"""``ckpt report``: one checkpoint, a pair or a run drawn as data (:mod:`.model`, :mod:`.build`) and as one
self-contained HTML page (:mod:`.html`)."""
