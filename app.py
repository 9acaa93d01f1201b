"""Entry point of the Streamlit app in the checkout (``make run``): the app itself is
`explorer.ui.app_main` (an installed package starts that file: ``ascend-explorer app``).
The emulation workers (explorer.core.worker_pool) re-import the main script as
``__mp_main__``, as multiprocessing does: that import draws nothing and starts nothing.
"""
from explorer.ui.app_main import main

if __name__ != "__mp_main__":
    main()
