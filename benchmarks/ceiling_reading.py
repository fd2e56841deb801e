"""Reading a precreated round's rates against the minimal binder's: as measured, and at the
pace KWOK's CPU per pod shows.

    python benchmarks/ceiling_reading.py OUT.json [OUT.json ...]

Reads again the runs of ``e2e_throughput.py --precreate --ceiling`` outputs (each file's
last line that is a JSON object) and prints one JSON object per file with the fractions
per scheduler and shape, both readings.

Which binder runs. The binds per second this bed can take move from run to run: runs of
the same binder ten minutes apart differed by up to 39%, and back-to-back ones by 0.1-30%
(four pairs). So each run is read against the binder runs nearest it in time, the last
before it and the first after it (with ``--ceiling-between`` its neighbours, without it
the round's first and last), and a fraction is worth what the runs behind it are worth:
read the means over rounds, not one run. ``ceiling_self_fractions`` says what that is: the
binder's own runs read the same way against theirs (with ``--ceiling-between``).

Why a second reading. The binder's runs moved between 503 and 827 pods/s for the same
work (binds, watch events sent, status writes): every process on the bed spent more CPU
per pod in the slow ones. KWOK does the same work per pod whichever scheduler binds (it
watches the bound pod and reports it Running), and the API server's CPU stayed 3.7-4.05
times KWOK's in every binder and asyncsched run, so KWOK's CPU per pod reads how dear the
bed's work was in that window. ``rate x KWOK's CPU ms per pod`` (KWOK's share of the
machine in the window) then compares runs at a common pace: the binder's runs read 268-294
where their rates spread by 64%.

What the paced reading cannot see: a scheduler that makes the bed's own work dearer
(cache pressure from the memory it walks, more context switches) shows it as a slower
pace, not a lower fraction, and on this bed asyncsched's windows did cost every process
more per pod than the binder runs beside them. It also favours a client that loads the
API server less: the binder with 16 binds in flight read 0.65 as measured and 1.11 paced.
So the measured reading is the target's; the paced one says how much of a miss the bed's
drift explains.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "BINDER",
    "fractions",
    "kwok_ms_per_pod",
    "read_against_ceiling",
    "readings",
    "reread",
    "self_fractions",
]

BINDER = "minimal-binder"


def kwok_ms_per_pod(figures: dict[str, Any]) -> float | None:
    """KWOK's CPU ms per bound pod between the run's first bind and its last."""
    kwok = figures.get("window_cpu_seconds", {}).get("kwok")
    bound = figures.get("bound")
    if not kwok or not bound:
        return None
    return kwok / bound * 1000


def read_against_ceiling(measured: list[dict[str, Any]]) -> None:
    """Each figure of one round (its runs in the order they ran) as a fraction of the
    binder runs nearest it: the mean of the last binder run before it and the first after
    it (``ceiling_pods_per_s``, ``fraction_of_ceiling``); a binder run's against the mean
    of all the round's binder runs. When KWOK's CPU was read in every run, the same at a
    common pace too (``fraction_of_ceiling_at_kwok_pace``: rates times KWOK's CPU ms per
    pod). Nothing is read when a binder run bound nothing."""
    binders = [i for i, f in enumerate(measured) if f["scheduler"] == BINDER]
    if not binders or not all(measured[i].get("throughput_pods_per_s") for i in binders):
        return
    rates = {i: float(measured[i]["throughput_pods_per_s"]) for i in binders}
    paces = {i: kwok_ms_per_pod(measured[i]) for i in binders}
    for at, figures in enumerate(measured):
        rate = figures.get("throughput_pods_per_s")
        if rate is None:
            continue
        if figures["scheduler"] == BINDER:
            nearest = binders
        else:
            before = [i for i in binders if i < at][-1:]
            after = [i for i in binders if i > at][:1]
            nearest = before + after
        ceiling = sum(rates[i] for i in nearest) / len(nearest)
        figures["ceiling_pods_per_s"] = round(ceiling, 1)
        figures["fraction_of_ceiling"] = round(rate / ceiling, 3)
        pace = kwok_ms_per_pod(figures)
        near_paces = [paces[i] for i in nearest]
        if pace and all(near_paces):
            paced = sum(rates[i] * (paces[i] or 0.0) for i in nearest) / len(nearest)
            figures["kwok_cpu_ms_per_pod"] = round(pace, 3)
            figures["fraction_of_ceiling_at_kwok_pace"] = round(rate * pace / paced, 3)


def fractions(
    runs: list[dict[str, Any]], key: str = "fraction_of_ceiling"
) -> dict[str, list[float]]:
    """Per scheduler and shape, its ``key`` in each round, in the order the runs came."""
    found: dict[str, list[float]] = {}
    for figures in runs:
        if key in figures and figures["scheduler"] != BINDER:
            qps = f"-qps{figures['kube_api_qps']}" if "kube_api_qps" in figures else ""
            name = f"{figures['scheduler']}{qps}-g{figures['gang']}"
            found.setdefault(name, []).append(figures[key])
    return found


def self_fractions(runs: list[dict[str, Any]]) -> list[float]:
    """The binder read as a scheduler is: each binder run that has binder runs before and
    after it in its round, over the mean of the nearest two. What the same program reads
    from run to run on this bed, so how far below 1.0 a fraction can fall with nothing
    slower; pessimistic by a little, as those neighbours are two runs away, not one."""
    found: list[float] = []
    for round_ in sorted({r.get("round", 0) for r in runs}):
        rates = [
            float(r["throughput_pods_per_s"])
            for r in runs
            if r.get("round", 0) == round_
            and r["scheduler"] == BINDER
            and r.get("throughput_pods_per_s")
        ]
        found += [
            round(rates[i] / ((rates[i - 1] + rates[i + 1]) / 2), 3)
            for i in range(1, len(rates) - 1)
        ]
    return found


def readings(runs: list[dict[str, Any]]) -> dict[str, dict[str, list[float]]]:
    """The readings of runs already read against their binder runs, per scheduler and
    shape: ``fractions`` and ``fractions_at_kwok_pace``; and ``ceiling_self_fractions``,
    the binder against its own neighbours (``--ceiling-between`` makes them)."""
    return {
        "fractions": fractions(runs),
        "fractions_at_kwok_pace": fractions(runs, "fraction_of_ceiling_at_kwok_pace"),
        "ceiling_self_fractions": {BINDER: self_fractions(runs)},
    }


def reread(report: dict[str, Any]) -> dict[str, Any]:
    """A saved report's runs read again round by round."""
    runs = [dict(r) for r in report.get("runs", []) if r.get("protocol") == "precreated"]
    for round_ in sorted({r.get("round", 0) for r in runs}):
        read_against_ceiling([r for r in runs if r.get("round", 0) == round_])
    return readings(runs)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: ceiling_reading.py OUT.json [OUT.json ...]", file=sys.stderr)
        return 2
    for name in argv:
        try:
            lines = [x for x in Path(name).read_text().splitlines() if x.startswith("{")]
        except (OSError, UnicodeDecodeError) as exc:
            print(f"{name}: cannot be read ({exc.__class__.__name__})", file=sys.stderr)
            return 2
        try:
            report = json.loads(lines[-1])
        except (json.JSONDecodeError, IndexError):
            print(f"{name}: no e2e_throughput JSON line in it", file=sys.stderr)
            return 2
        print(json.dumps({"file": name, **reread(report)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
