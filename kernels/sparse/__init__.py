"""Sparse attention and KV compression, run as an option of the decode kernel: which
tokens a policy keeps (``policies``), the top-k selection and compression programs
(``select``, ``compress``), and the uploadable attention-score data (``data``).
Not a kernel of its own (no ``RECORD``): the decode kernel's record covers it.
"""
