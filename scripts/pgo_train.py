"""The training workload of the profile-guided build (scripts/install_pgo.sh).

Runs the simulator, through the Python API as a user does, on the kinds of scenario the
studies run, so that the compiler learns which branches are hot: dumbbells with every
algorithm at shallow, medium and deep buffers, the 10-hop parking lot, a dumbbell with many
flows, random loss, a finite transfer, and the hand-over of the results (tables, Parquet).
What is not run here is still compiled and correct, only laid out without the profile's
guidance. The whole workload takes 2-3 s with the instrumented build.

Usage: ``python3 scripts/pgo_train.py`` (with the instrumented ``ccfair`` first on the path).
``python3 scripts/pgo_train.py --digest`` prints instead a digest of every result table of
the scenarios (not the run's provenance: it records wall times), and which build ran them:
``install_pgo.sh --check`` compares the plain and the profile-guided build by it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

import ccfair


def scenarios() -> list[ccfair.Scenario]:
    """The training scenarios, 2 to 60 simulated seconds each."""
    dumbbell, parking_lot = ccfair.dumbbell, ccfair.parking_lot
    runs = [
        dumbbell(2, ["bbr", "cubic"], buffer_bdp=alpha, duration="60s", name=f"bbr-cubic-{alpha}")
        for alpha in (0.5, 2.0, 16.0)
    ]
    runs += [
        dumbbell(2, [a, b], buffer_bdp=1.0, duration="10s", name=f"{a}-{b}")
        for a, b in (("reno", "cubic"), ("copa", "cubic"), ("bbr", "reno"), ("copa", "bbr"))
    ]
    runs += [
        parking_lot(10, "bbr", "cubic", buffer_bdp=2.0, duration="5s", name="pl-bbr"),
        parking_lot(4, "cubic", "reno", buffer_bdp=0.5, duration="5s", name="pl-cubic"),
        dumbbell(100, "cubic", bottleneck_rate="1Gbit/s", buffer_bdp=1.0, duration="2s"),
        dumbbell(
            3,
            "cubic",
            bottleneck_loss=0.01,
            buffer_bdp=1.0,
            sizes=[None, "2MB", None],
            duration="10s",
            name="lossy",
        ),
    ]
    return runs


def digests() -> dict[str, str]:
    """SHA-256 of each scenario's result tables (values, dtypes, column names)."""
    import hashlib

    import pandas as pd

    out = {}
    for scenario in scenarios():
        result = ccfair.run(scenario)
        h = hashlib.sha256()
        for name in ("flows", "timeseries", "links", "link_summary"):
            table = getattr(result, name)
            h.update(f"{name}:{list(table.columns)}:{list(map(str, table.dtypes))}".encode())
            h.update(pd.util.hash_pandas_object(table, index=False).to_numpy().tobytes())
        out[scenario.name] = h.hexdigest()
    return out


def main() -> int:
    if sys.argv[1:] not in ([], ["--digest"]):
        print(
            f"usage: python3 scripts/pgo_train.py [--digest] (not {sys.argv[1:]})", file=sys.stderr
        )
        return 2
    if sys.argv[1:] == ["--digest"]:
        from ccfair import _core

        print(json.dumps({"pgo": _core.BUILD_PGO, "digests": digests()}))
        return 0
    print(f"training the profile-guided build with {ccfair.__file__}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ccfair-pgo-") as out:
        for i, scenario in enumerate(scenarios()):
            result = ccfair.run(scenario)
            # The hand-over and saving are part of every run a user makes.
            if i % 3 == 0:
                result.save(out)
            print(f"  {scenario.name}: {len(result.flows)} flows")
    print(f"trained in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
