"""The simulator backend: ccfair's discrete-event engine (crates/ccfair-sim), in this process.

Example:
    >>> BACKEND.name, BACKEND.real_time
    ('sim', False)
"""

from __future__ import annotations

import json
from typing import Any

from ccfair import _core
from ccfair.backends.base import Backend, BackendRun, ResolvedScenario
from ccfair.limits import Limits


class SimBackend(Backend):
    """Runs the scenario in the simulator: every algorithm of the registry, no host setup,
    as fast as the engine goes (runs are independent and may run in parallel)."""

    name = "sim"
    summary = "simulator: ccfair's discrete-event engine with Linux TCP semantics"
    title = "the simulator"
    docs = "docs/fidelity.md"
    # `_core.run` refuses a run over its limits (LimitError) before it starts.
    checks_limits = True

    def run(
        self,
        resolved: ResolvedScenario,
        run_id: str,
        engine_spec: dict[str, Any],
        limits: Limits,
        *,
        force_bpf: bool = False,
    ) -> BackendRun:
        """Run the engine on ``engine_spec`` within ``limits``' event budget."""
        return BackendRun(_core.run(json.dumps(engine_spec), run_id, limits.engine_json()))


BACKEND = SimBackend()
