"""TensorFlow's LevelDB-style SSTable: the table format of a bundle's ``.index`` and of a whole V1 checkpoint.

``reader`` parses tables (whole, or lazily block by block), ``writer`` writes them byte-compatibly
with TensorFlow, ``snappy`` decodes the compressed blocks old TensorFlow wrote.
"""
