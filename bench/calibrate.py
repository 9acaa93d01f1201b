"""Fit the DMA queue numbers to published single-core DataCopy curves and print them beside
the presets' values, with residuals: ``python -m bench.calibrate [preset]``.

Fitted: each DMA queue's latency (MTE2 reads to L1 and to UB share one) and each path's
per-core cap, by least squares in relative error over msKPP's curves
(explorer/core/validation/mskpp_copies.toml). Taken as given: the issue cost and the burst
cost (the preset's, from the CANN data_copy sample). Derived: the queue depth that the
Ascend C guide's "16 KB per DataCopy reaches full bandwidth" implies (Little's law).
The emulator's own curve is printed next to the published one, so any drift shows, and
last its streaming rate against bytes per copy on one and on all vector cores.
"""
from __future__ import annotations

import sys

import numpy as np

import hardware_presets
from explorer.core.validation import copies


def _row(*cells, widths=(28, 10, 10, 10)) -> str:
    return "".join(f"{c:>{w}}" if i else f"{c:<{w}}" for i, (c, w) in enumerate(zip(cells, widths)))


def main(preset: str = "910B1") -> None:
    chip = hardware_presets.load(preset)
    result = copies.fit(chip)
    print(f"DMA queue calibration against msKPP single-core curves (preset {preset})")
    print(_row("field", "fitted", "preset", "unit"))
    for queue, latency in result.latency.items():
        print(_row(f"{queue}_latency_cycles", f"{latency:.1f}",
                   getattr(chip, f"{queue}_latency_cycles"), "cycles"))
    for path, cap in result.cap.items():
        field = copies.PATHS[path][4]
        print(_row(field, f"{cap:.1f}", getattr(chip, field), "B/cycle") + f"  ({path})")
    print("\nqueue depth implied by the guide's 16 KB rule (fitted latency and cap):")
    for path, cap in result.cap.items():
        q = copies.QUEUE_OF[path]
        depth = copies.depth_for_full_rate(
            getattr(chip, f"{q}_issue_cycles"), getattr(chip, f"{q}_burst_cycles"),
            chip.dma_burst_bytes, result.latency[q], cap)
        print(f"  {path:<12} {depth:>3}   preset {q}_max_outstanding = "
              f"{getattr(chip, f'{q}_max_outstanding')}")
    print("\nper point: KiB, published GiB/s, fit GiB/s, emulated GiB/s (preset), error")
    errors = []
    for curve in copies.curves():
        print(f"{curve.title} [{curve.table}]")
        fit_cycles = curve.cycles * (1 + result.residuals[curve.path])
        for nbytes, cycles, model in zip(curve.nbytes, curve.cycles, fit_cycles):
            emu = copies.emulated_cycles(chip, curve.path, nbytes)
            pub, fitted, emulated = (copies.gib_per_s(nbytes, c, copies.clock_mhz())
                                     for c in (cycles, model, emu))
            errors.append(emulated / pub - 1)
            print(f"  {nbytes / 1024:>6.0f} {pub:>9.1f} {fitted:>9.1f} {emulated:>9.1f} "
                  f"{100 * (emulated / pub - 1):>+7.1f}%")
    err = np.abs(errors)
    print(f"\nemulated vs published: mean |error| {100 * err.mean():.1f}%, "
          f"max {100 * err.max():.1f}% over {len(err)} points")
    cores = chip.core_kinds().count("AIV")
    print(f"\nthe emulator's GM -> UB streaming (independent copies, data from HBM; no "
          f"published figure to compare):\n{'bytes/copy':>12}{'1 AIV GB/s':>12}"
          f"{f'{cores} AIVs GB/s':>14}")
    for nbytes in (128, 512, 2048, 8192, 16384, 65536):
        print(f"{nbytes:>12}{copies.streaming_gbps(chip, nbytes, 1):>12.1f}"
              f"{copies.streaming_gbps(chip, nbytes, cores):>14.1f}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
