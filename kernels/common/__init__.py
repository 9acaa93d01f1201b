"""What every kernel shares: the program builder and its instruction vocabulary
(``program``), the TQue pipelining idiom (``tque``), the typed parameter schema
(``params``), the instruction cap and memory budgets (``budget``), the number formats and
their rounding (``formats``, ``precision``, ``accumulate``, ``attention_math``), task
scheduling policies (``scheduling``), instruction cycle counts (``cycles``) and the
``KernelRecord`` that describes a kernel to the layers above (``record``). Holds no kernel.
"""
