"""Testbed options (issue 14): the netem queue (``links[].queue``), segmentation offload
(``tcp.tso``, ``tcp.tso_defer``) and the send buffer (``tcp.wmem``) through the Python spec:
clear errors, off by default, and out of the run identity at their defaults."""

from __future__ import annotations

import ccfair
import pytest
from ccfair.errors import SpecError
from ccfair.spec.identity import run_id_of, spec_identity
from ccfair.spec.resolved import Resolved


def scenario(tcp: dict | None = None, **link: object) -> dict:
    spec: dict = {
        "duration": "2s",
        "links": [{"between": ["a", "b"], "rate": "10Mbit/s", "delay": "20ms", **link}],
        "flows": [{"src": "a", "dst": "b", "cca": "cubic"}],
    }
    if tcp is not None:
        spec["tcp"] = tcp
    return spec


def resolve(spec: dict) -> Resolved:
    return ccfair.Scenario.from_dict(spec).resolve()


def test_options_at_their_defaults_keep_the_run_id():
    base = resolve(scenario())
    explicit = resolve(
        scenario(tcp={"tso": "off", "tso_defer": True, "wmem": "fit"}, queue="droptail")
    )
    assert run_id_of(base.normalized, "sim") == run_id_of(explicit.normalized, "sim")
    assert base.engine_json == explicit.engine_json
    assert "queue" not in base.engine_spec["links"][0]
    assert "queue" not in base.normalized["links"][0]
    identity = spec_identity(base.normalized)
    assert not {"tso", "tso_defer", "wmem"} & set(identity.get("tcp", {}))


def test_non_default_options_name_the_run():
    base = run_id_of(resolve(scenario()).normalized, "sim")
    netem = resolve(scenario(queue="netem"))
    assert netem.engine_spec["links"][0]["queue"] == "netem"
    assert netem.links[0].queue == "netem"
    tso = resolve(scenario(tcp={"tso": "linux"}))
    ids = {base, run_id_of(netem.normalized, "sim"), run_id_of(tso.normalized, "sim")}
    assert len(ids) == 3
    # The record rebuilds the same scenario.
    again = ccfair.Scenario.from_normalized(netem.normalized).resolve()
    assert again.engine_json == netem.engine_json
    assert ccfair.Scenario.from_dict(netem.scenario.to_dict()).resolve().engine_json == (
        netem.engine_json
    )


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        (scenario(queue="red"), "links[0].queue", "is not a queue; queues: droptail"),
        (scenario(queue=1), "links[0].queue", "string"),
        (scenario(tcp={"tso": "on"}), "tcp.tso", "unknown variant `on`, expected `off` or `linux`"),
        (scenario(tcp={"tso_defer": "yes"}), "tcp.tso_defer", "invalid type"),
        (scenario(tcp={"wmem": "big"}), "tcp.wmem", 'must be "fit", "linux" or three byte counts'),
        (scenario(tcp={"wmem": [4096, 2**20, 4096]}), "tcp.wmem", "min <= default <= max"),
        (scenario(tcp={"wmem": [4096, 16384, 2**31]}), "tcp.wmem", "tcp_wmem is an int"),
    ],
)
def test_bad_values_are_errors_naming_the_field(spec, path, message):
    with pytest.raises(SpecError, match=message) as info:
        resolve(spec)
    assert info.value.path.endswith(path), info.value.path


def test_a_netem_limit_below_the_delay_line_caps_the_throughput():
    """10 Mbit/s, 20 ms: 16.7 packets of 1500 B in the delay line. A netem limit of 8 lets
    8 packets through per 21.2 ms (delay plus transmission time): 4.5 Mbit/s on the wire,
    where a drop-tail buffer of 8 lets CUBIC fill most of the link."""
    netem = ccfair.run(scenario(queue="netem", buffer=8, **{"delay": "20ms"}))
    droptail = ccfair.run(scenario(buffer=8))
    rate = {}
    for name, r in (("netem", netem), ("droptail", droptail)):
        row = r.link_summary.iloc[0]
        rate[name] = row["tx_bytes"] * 8 / 2.0
    ceiling = 8 * 1500 * 8 / (0.020 + 0.0012)
    assert rate["netem"] <= ceiling * 1.01, rate
    assert rate["droptail"] > 1.5 * rate["netem"], rate


def test_tso_and_the_send_buffer_run_on_the_simulator():
    r = ccfair.run(scenario(tcp={"tso": "linux", "wmem": "linux"}))
    assert r.flows["goodput_mbps"].iloc[0] > 5


def test_the_kernel_backend_refuses_simulator_only_tcp_options():
    from ccfair.backends.kernel.checks import check_scenario

    for tcp in ({"tso": "linux"}, {"wmem": "linux"}):
        with pytest.raises(SpecError, match="tcp\\."):
            check_scenario(resolve(scenario(tcp=tcp)), offered=["cubic", "reno"])


# ---- testbed profiles ------------------------------------------------------------------------


def test_ideal_is_today_and_stays_out_of_the_record():
    base = resolve(scenario())
    ideal = resolve({**scenario(), "profile": "ideal"})
    assert "profile" not in ideal.normalized
    assert run_id_of(base.normalized, "sim") == run_id_of(ideal.normalized, "sim")


@pytest.mark.parametrize(
    ("profile", "queue"),
    [("linux-stock", None), ("mininet-netem", "netem"), ("core-netem", "netem")],
)
def test_profiles_set_stock_linux_hosts_and_their_queues(profile, queue):
    r = resolve({**scenario(), "profile": profile})
    assert r.normalized["profile"] == profile
    tcp = r.engine_spec["flows"][0]["tcp"]
    assert (tcp["rmem"], tcp["tso"], tcp["wmem"]) == ("linux", "linux", "fit")
    assert r.engine_spec["links"][0].get("queue") == queue
    again = ccfair.Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json


def test_the_scenario_own_settings_win_over_its_profile():
    spec = {**scenario(tcp={"tso": "off"}, queue="droptail"), "profile": "core-netem"}
    r = resolve(spec)
    assert r.engine_spec["flows"][0]["tcp"]["tso"] == "off"
    assert r.engine_spec["flows"][0]["tcp"]["rmem"] == "linux"
    assert "queue" not in r.engine_spec["links"][0]
    # The link's own droptail survives the record.
    again = ccfair.Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json


def test_an_unknown_profile_lists_the_profiles():
    with pytest.raises(SpecError, match="profiles: ideal, linux-stock, mininet-netem") as info:
        resolve({**scenario(), "profile": "emulab"})
    assert info.value.path == "profile"


def test_a_profile_is_a_sweep_axis():
    from ccfair.spec.sweep import Sweep

    sw = Sweep.from_dict(
        {
            "name": "profiles",
            "base": {"builder": "dumbbell", "duration": "2s"},
            "grid": {"profile": ["ideal", "linux-stock", "mininet-netem"]},
        }
    )
    points = sw.expand()
    assert [p.params["profile"] for p in points] == ["ideal", "linux-stock", "mininet-netem"]
    assert len({p.run_id for p in points}) == 3


def test_the_kernel_backend_refuses_profiles_naming_what_it_can_take():
    from ccfair.backends.kernel.checks import check_scenario

    with pytest.raises(SpecError, match='tcp.rmem = "linux"') as info:
        check_scenario(resolve({**scenario(), "profile": "linux-stock"}), offered=["cubic", "reno"])
    assert info.value.path == "profile"
