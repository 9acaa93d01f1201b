"""The validation table: ``python -m bench.validate``. Every published real-hardware case
(explorer/core/validation) beside the emulator's figure, its error and tolerance, then the
mean and max error per group. The same cases are tests in tests/validation/."""
from __future__ import annotations

from explorer.core.validation import cases as validation


def main() -> None:
    outcomes = [validation.emulate(case) for case in validation.cases()]
    print(f"time model {validation.MODEL_VERSION}")
    print(f"{'case':<34}{'preset':<8}{'published':>11}{'emulated':>11}{'error':>9}"
          f"{'tol':>6}  ok  ratios (emulated - published, points)")
    for o in outcomes:
        c = o.case
        ratios = " ".join(f"{k}={100 * e:+.0f}" for k, e in o.ratio_errors.items())
        print(f"{c.id:<34}{c.preset:<8}{c.published_us:>9.2f}us{o.emulated_us:>9.2f}us"
              f"{100 * o.error:>+8.1f}%{100 * c.tolerance:>5.0f}%  {'yes' if o.ok else 'NO '} "
              f"{ratios}")
    for group in sorted({o.case.group for o in outcomes}):
        s = validation.summary(outcomes, group)
        line = (f"{group}: {s['cases']} cases, mean |time error| {100 * s['mean_error']:.1f}%, "
                f"max {100 * s['max_error']:.1f}%, {s['within']} within tolerance")
        if s["mean_ratio_error"]:
            line += (f"; pipe ratios mean |error| {100 * s['mean_ratio_error']:.1f} points, "
                     f"max {100 * s['max_ratio_error']:.1f}")
        print(line)
    print("sources: explorer/core/validation/published_cases.toml, mskpp_copies.toml")


if __name__ == "__main__":
    main()
