"""The UI's record of each kernel page, keyed by the kernel's name (``kernels.KERNELS``).

What the UI needs beyond the kernel's own record: the page's URL path, the session prefix
of its widgets (so the sweep can start from the page's state), the page's defaults beyond
the kernel's, the catalogue prefix of its parameter labels and the sweep's first knob. A
kernel without a page (a newly registered one) gets ``page_of``'s plain record: the generic
page (``kernels?kernel=<name>``, values under ``kn.<name>.``), the kernel's defaults,
generic labels, its first numeric parameter as the knob.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import kernels
from explorer.core.i18n import t
from explorer.ui import decode_controls, gemm_controls, playground


@dataclass(frozen=True)
class KernelPage:
    kernel: str
    path: str | None = None  # URL path of the page, None without one
    prefix: str | None = None  # session prefix of the page's values ("va.": va.n, ...)
    defaults: dict = field(default_factory=dict)  # the page's defaults beyond the kernel's
    label_prefix: str = "ui.param"  # catalogue prefix of the parameters' labels
    label_prefixes: dict = field(default_factory=dict)  # ... of some parameters (name -> prefix)
    first_knob: tuple[str, str] | None = None  # the sweep's first knob and its values

    def label_id(self, name: str) -> str:
        """Message id of parameter ``name``'s label."""
        return f"{self.label_prefixes.get(name, self.label_prefix)}.{name}.label"

    def title(self, lang: str) -> str:
        """The kernel's title (its record's message id)."""
        return t(kernels.get(self.kernel).title_key, lang)

    @property
    def seed_key(self) -> str | None:
        """Session key of the page's seed."""
        return None if self.prefix is None else self.prefix + "seed"


PAGES: dict[str, KernelPage] = {p.kernel: p for p in (
    KernelPage("vector_add", "vector_add", playground.PREFIX,
               first_knob=("n", "65536:4194304:*4")),
    KernelPage("gemm", "gemm", gemm_controls.PREFIX,
               label_prefixes={"block_dim": "ui.gemm.param"}, first_knob=("M", "512:4096:512")),
    KernelPage("decode", "decode", decode_controls.PREFIX, decode_controls.UI_DEFAULTS,
               label_prefix="ui.decode.param", first_knob=("batch", "1:16:*2"),
               label_prefixes=dict.fromkeys(("sparse", "keep_ratio", "sinks", "window",
                                             "page_size", "compress_every"), "ui.sparse.param")),
)}


#: URL path of the generic page (explorer/ui/pages/kernels.py) that shows any other kernel
GENERIC_PATH = "kernels"


def page_of(kernel: str) -> KernelPage:
    """The page record of a registered kernel (a plain one, on the generic page, when it
    has no page of its own)."""
    if kernel in PAGES:
        return PAGES[kernel]
    record = kernels.get(kernel)
    first = next((s for s in record.params if s.kind in (int, float) and s.min is not None),
                 None)
    return KernelPage(kernel, f"{GENERIC_PATH}?kernel={kernel}", f"kn.{kernel}.",
                      first_knob=(first.name, "") if first else None)


def names() -> tuple[str, ...]:
    """Every registered kernel, the ones with a page first (in page order)."""
    return tuple(PAGES) + tuple(k for k in kernels.KERNELS if k not in PAGES)
