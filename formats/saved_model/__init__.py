"""The ``saved-model`` format: SavedModel directories (``saved_model.pb`` + ``variables/``) as checkpoints."""
