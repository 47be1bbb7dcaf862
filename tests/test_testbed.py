"""Testbeds and host kernels (docs/spec.md, "Testbeds and host kernels"): Linux hosts as
shipped by default, the idealised host as an explicit choice, the kernel's settings and
algorithm versions, the netem queue (``links[].queue``), segmentation offload (``tcp.tso``,
``tcp.tso_defer``) and the send buffer (``tcp.wmem``) through the Python spec: clear errors,
and out of the run identity at the engine's defaults."""

from __future__ import annotations

import ccfair
import pytest
from ccfair.errors import SpecError
from ccfair.spec.identity import run_id_of, spec_identity
from ccfair.spec.resolved import Resolved


def scenario(tcp: dict | None = None, testbed: str | None = "ideal", **link: object) -> dict:
    """A one-link scenario, on the idealised hosts unless ``testbed`` says (None: the
    default testbed), so that the options under test start from the engine's defaults."""
    spec: dict = {
        "duration": "2s",
        "links": [{"between": ["a", "b"], "rate": "10Mbit/s", "delay": "20ms", **link}],
        "flows": [{"src": "a", "dst": "b", "cca": "cubic"}],
    }
    if tcp is not None:
        spec["tcp"] = tcp
    if testbed is not None:
        spec["testbed"] = testbed
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
        (scenario(queue="blue"), "links[0].queue", "is not a queue; queues: droptail"),
        (scenario(queue=1), "links[0].queue", "string"),
        (scenario(tcp={"tso": "on"}), "tcp.tso", "unknown variant `on`, expected `off` or `linux`"),
        (scenario(tcp={"tso_defer": "yes"}), "tcp.tso_defer", "invalid type"),
        (
            scenario(tcp={"undo_rules": "linux-5.x"}),
            "tcp.undo_rules",
            "unknown variant `linux-5.x`, expected `linux-6.18` or `linux-4.x`",
        ),
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


def test_the_kernel_backend_sets_the_socket_buffers_and_refuses_model_only_options():
    from ccfair.backends.kernel.checks import check_scenario, socket_buffers

    # Stock Linux hosts are what it runs: their send and receive buffers are sysctls.
    stock = resolve(scenario(testbed=None))
    check_scenario(stock, offered=["cubic", "reno"])
    rmem, wmem, _ = socket_buffers(stock)
    assert rmem == [[4096, 131072, 33554432]] and wmem == [[4096, 16384, 4194304]]
    ideal = resolve(scenario())
    check_scenario(ideal, offered=["cubic", "reno"])
    rmem, wmem, fit = socket_buffers(ideal)
    assert rmem[0][2] == fit[1] and wmem[0][2] == fit[0]  # never limiting, per host
    # An option Linux has no setting for is refused by name.
    for tcp in ({"tso_defer": False}, {"pacer": "linux-4.x"}, {"sack_compression": False}):
        with pytest.raises(SpecError, match="tcp\\."):
            check_scenario(resolve(scenario(tcp=tcp, testbed=None)), offered=["cubic", "reno"])


# ---- testbeds and host kernels ---------------------------------------------------------------


def test_linux_stock_hosts_are_the_default_and_recorded():
    r = resolve(scenario(testbed=None))
    assert (r.normalized["testbed"], r.normalized["kernel"]) == ("linux-stock", "6.18")
    tcp = r.engine_spec["flows"][0]["tcp"]
    assert (tcp["rmem"], tcp["wmem"], tcp["tso"], tcp["hz"]) == ("linux", "linux", "linux", 250)
    assert r.engine_spec["flows"][0]["cca_params"]["hystart_version"] == "linux-6.18"
    explicit = resolve({**scenario(testbed=None), "testbed": "linux-stock", "kernel": "6.18"})
    assert run_id_of(r.normalized, "sim") == run_id_of(explicit.normalized, "sim")


def test_ideal_hosts_are_the_engine_defaults_and_have_no_kernel():
    r = resolve(scenario())
    assert (r.normalized["testbed"], r.normalized["kernel"]) == ("ideal", None)
    tcp = r.engine_spec["flows"][0]["tcp"]
    assert (tcp["rmem"], tcp["wmem"], tcp["tso"], tcp["hz"]) == ("fit", "fit", "off", 1000)
    stock = resolve(scenario(testbed=None))
    assert run_id_of(r.normalized, "sim") != run_id_of(stock.normalized, "sim")
    again = ccfair.Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json


@pytest.mark.parametrize(
    ("testbed", "queue"),
    [("linux-stock", None), ("mininet-netem", "netem"), ("core-netem", "netem")],
)
def test_testbeds_set_stock_linux_hosts_and_their_queues(testbed, queue):
    r = resolve(scenario(testbed=testbed))
    assert r.normalized["testbed"] == testbed
    tcp = r.engine_spec["flows"][0]["tcp"]
    assert (tcp["rmem"], tcp["tso"], tcp["wmem"]) == ("linux", "linux", "linux")
    assert r.engine_spec["links"][0].get("queue") == queue
    again = ccfair.Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json


@pytest.mark.parametrize("kernel", ["4.13", "4.15"])
def test_a_4x_kernel_sets_its_substrate_and_its_algorithms_versions(kernel):
    spec = {**scenario(testbed=None), "kernel": kernel}
    spec["flows"] = [
        {"src": "a", "dst": "b", "cca": "bbr"},
        {"src": "a", "dst": "b", "cca": "cubic"},
    ]
    r = resolve(spec)
    bbr, cubic = r.engine_spec["flows"]
    assert bbr["cca_params"]["version"] == f"linux-{kernel}"
    assert cubic["cca_params"]["hystart_version"] == "linux-4.x"
    tcp = bbr["tcp"]
    assert tcp["rmem"] == [4096, 87380, 6291456]
    assert (tcp["rcv_window"], tcp["sack_compression"], tcp["ofo_quickack"]) == (
        "linux-4.x",
        False,
        True,
    )
    assert tcp["tlp_schedule"] == f"linux-{kernel}"
    assert (tcp["prr"], tcp["undo_rules"]) == ("linux-4.x", "linux-4.x")


def test_on_ideal_hosts_a_kernel_names_only_the_algorithms_versions():
    spec = {**scenario(), "kernel": "4.15"}
    spec["flows"] = [{"src": "a", "dst": "b", "cca": "bbr"}]
    r = resolve(spec)
    assert r.engine_spec["flows"][0]["cca_params"]["version"] == "linux-4.15"
    assert r.engine_spec["flows"][0]["tcp"]["rmem"] == "fit"
    assert r.normalized["kernel"] == "4.15"


def test_the_scenario_own_settings_win_over_its_testbed_and_kernel():
    spec = {
        **scenario(tcp={"tso": "off", "rmem": "fit"}, queue="droptail", testbed="core-netem"),
        "kernel": "4.15",
    }
    spec["flows"] = [
        {"src": "a", "dst": "b", "cca": "bbr", "cca_params": {"version": "linux-6.18"}}
    ]
    r = resolve(spec)
    f = r.engine_spec["flows"][0]
    assert (f["tcp"]["tso"], f["tcp"]["rmem"], f["tcp"]["rcv_window"]) == (
        "off",
        "fit",
        "linux-4.x",
    )
    assert f["cca_params"]["version"] == "linux-6.18"
    assert "queue" not in r.engine_spec["links"][0]
    # The link's own droptail survives the record.
    again = ccfair.Scenario.from_normalized(r.normalized).resolve()
    assert again.engine_json == r.engine_json


def test_unknown_testbeds_and_kernels_list_the_known_ones():
    with pytest.raises(SpecError, match="testbeds: linux-stock, ideal, mininet-netem") as info:
        resolve(scenario(testbed="emulab"))
    assert info.value.path == "testbed"
    for bad in ("5.4", 4.15, ""):
        with pytest.raises(SpecError) as info:
            resolve({**scenario(), "kernel": bad})
        assert info.value.path == "kernel"


def test_profile_was_renamed_and_says_so():
    with pytest.raises(SpecError, match="renamed testbed") as info:
        resolve({**scenario(testbed=None), "profile": "linux-stock"})
    assert info.value.path == "profile"


def test_a_testbed_and_a_kernel_are_sweep_axes():
    from ccfair.spec.sweep import Sweep

    sw = Sweep.from_dict(
        {
            "name": "testbeds",
            "base": {"builder": "dumbbell", "duration": "2s"},
            "grid": {
                "testbed": ["ideal", "linux-stock", "mininet-netem"],
                "kernel": ["6.18", "4.15"],
            },
        }
    )
    points = sw.expand()
    assert [(p.params["testbed"], p.params["kernel"]) for p in points][:2] == [
        ("ideal", "6.18"),
        ("ideal", "4.15"),
    ]
    assert len({p.run_id for p in points}) == 6


def test_the_kernel_backend_refuses_a_kernel_it_cannot_be():
    from ccfair.backends.kernel.checks import check_scenario

    with pytest.raises(SpecError, match='give kernel = "6.18"') as info:
        check_scenario(resolve({**scenario(testbed=None), "kernel": "4.15"}), offered=["cubic"])
    assert info.value.path == "kernel"
    # On idealised hosts a kernel names only the algorithms; Linux's own CUBIC has no 4.x
    # HyStart, which is what is refused then.
    with pytest.raises(SpecError, match="a modification of cubic") as info:
        check_scenario(resolve({**scenario(), "kernel": "4.15"}), offered=["cubic"])
    assert info.value.path == "flows[0].cca_params.hystart_version"


def test_rack_off_is_refused_on_hosts_whose_linux_has_only_rack():
    """Linux 6.17 removed loss detection without RACK (``tcp_recovery`` bit 0 has no
    effect): on 6.18 hosts ``rack = false`` is an error naming the field, on both backends;
    on 4.x hosts and the idealised host it runs (the simulator's RFC 6675 path)."""
    with pytest.raises(SpecError, match="RACK only") as info:
        resolve(scenario({"rack": False}, testbed=None))
    assert info.value.path == "tcp.rack"
    flow_level = scenario(testbed=None)
    flow_level["flows"][0]["tcp"] = {"rack": False}
    with pytest.raises(SpecError, match='kernel = "4.15"') as info:
        resolve(flow_level)
    assert info.value.path == "flows[0].tcp.rack"
    for kernel in ("4.15", "4.13"):
        r = resolve({**scenario({"rack": False}, testbed=None), "kernel": kernel})
        assert r.flows[0].tcp["rack"] is False
    assert resolve(scenario({"rack": False})).flows[0].tcp["rack"] is False
