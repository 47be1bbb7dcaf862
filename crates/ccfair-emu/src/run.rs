//! One run on the kernel backend: set up the hosts' TUN devices, start the forwarder, the
//! receivers and the senders, fix t = 0 once every connection is up, and assemble the
//! simulator's result tables from what they measured.
//!
//! The namespaces themselves are created and removed by the Python backend
//! (python/ccfair/kernel.py), which also owns crash recovery. Everything created here lives
//! in this process: the TUN devices vanish when their fds close (also when the process
//! dies), the sockets with their threads.

use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use serde::Serialize;

use ccfair_sim::link::ChannelCounters;
use ccfair_sim::record::{self, FlowRecorder, FlowSample, FlowSummary, LinkSamples};
use ccfair_sim::spec::RunSpec;
use ccfair_sim::world::{connection_columns, ConnectionTimes, EngineStats, RunResult};

use crate::bpfcc;
use crate::config::{Datapath, EmuConfig, HostConfig};
use crate::error::EmuError;
use crate::forwarder::{Control, FlowCounts, Forwarder, ForwarderReport, ForwarderStats};
use crate::lateness::{Histogram, Summary};
use crate::sys;
use crate::traffic::{self, Progress, ReceiverOut, ReceiverPlan, SenderOut, SenderPlan, Timeline};

/// A run's result: the simulator's tables plus the emulator's self-checks.
pub struct EmuResult {
    /// The simulator's result tables, filled from what the hosts and the forwarder measured.
    pub result: RunResult,
    /// The emulation's measurements of itself.
    pub selfcheck: SelfCheck,
}

/// Measurements of the emulation itself (docs/kernel.md, "Self-checks"). The bounds are
/// applied by the Python backend, which flags a run that exceeds them.
#[derive(Clone, Debug, Serialize)]
pub struct SelfCheck {
    /// The forwarder's lateness, stalls, CPU and achieved rates (zeros on the veth data path).
    pub forwarder: ForwarderStats,
    /// CPU time of the whole process (forwarder, senders, receivers, the kernel work done
    /// in their system calls) over the run's wall time.
    pub process_cpu_frac: f64,
    /// Sender and receiver grid points skipped because a thread was late by a whole
    /// sampling interval or more.
    pub missed_samples: u64,
    /// Lateness of the senders' TCP_INFO samples: time taken minus grid point t0 + k x
    /// interval.
    pub sampling_lateness: Summary,
    /// The Linux congestion control each flow's socket ran (read back from the socket).
    pub kernel_ccas: Vec<String>,
    /// Wall time from t = 0 to the end of the run (s).
    pub wall_s: f64,
    /// Setup time: the hosts' devices, the receivers' and senders' sockets (s).
    pub setup_s: f64,
    /// Per flow, when its application called connect() and when connect() returned (s
    /// after t = 0): with the network-side times in the flows table (`syn_sent_s`,
    /// `first_data_sent_s`) they show where the launch offsets come from.
    pub connect_s: Vec<f64>,
    /// When each flow's connect() returned, s after t = 0 (NaN if it never did).
    pub established_s: Vec<f64>,
}

/// A run on the kernel backend, set up and ready to start: the hosts' devices exist, the
/// BPF programs are registered. [`Emulation::run`] runs it; dropping it releases what the
/// setup created.
pub struct Emulation {
    cfg: EmuConfig,
    /// TUN fds, one per host (same order as `cfg.hosts`). Dropping them removes the devices.
    tuns: Vec<OwnedFd>,
    /// ccfair's BPF congestion controls, registered until the emulation is dropped.
    bpf: Vec<bpfcc::Registered>,
    control: Arc<Control>,
    setup_started: u64,
}

/// Run an `ip -batch` script (iproute2) in the namespace `netns`.
fn run_ip(netns: &str, script: &str) -> Result<(), EmuError> {
    let mut child = Command::new("ip")
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| EmuError::IpMissing(Arc::new(e)))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| EmuError::os(format!("ip -n {netns}"), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| EmuError::os(format!("ip -n {netns}"), e))?;
    if !out.status.success() {
        return Err(EmuError::IpFailed {
            netns: netns.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// In the host's namespace: write its sysctls, then (TUN data path) create its TUN device.
fn host_setup(h: &HostConfig, datapath: Datapath) -> Result<Option<OwnedFd>, EmuError> {
    let h = h.clone();
    thread::spawn(move || -> Result<Option<OwnedFd>, EmuError> {
        let path = Path::new("/run/netns").join(&h.netns);
        sys::enter_netns(&path).map_err(|e| EmuError::os(format!("namespace {}", h.netns), e))?;
        for (key, value) in &h.sysctls {
            // /proc/sys/net resolves against the calling thread's namespace.
            let p = Path::new("/proc/sys").join(key);
            std::fs::write(&p, value)
                .map_err(|e| EmuError::os(format!("{}: sysctl {key} = {value}", h.netns), e))?;
        }
        match datapath {
            Datapath::Tun => sys::open_tun(&h.dev)
                .map(Some)
                .map_err(|e| EmuError::os(format!("{}: TUN device {}", h.netns, h.dev), e)),
            Datapath::Veth => Ok(None),
        }
    })
    .join()
    .map_err(|_| EmuError::Panicked {
        thread: "a setup thread",
    })?
}

impl Emulation {
    /// Create every host's TUN device in its (existing) namespace and configure its address
    /// and route. Nothing is sent yet.
    pub fn setup(cfg: EmuConfig) -> Result<Self, EmuError> {
        cfg.check()?;
        let setup_started = sys::monotonic_ns();
        let mut bpf = Vec::with_capacity(cfg.bpf.len());
        for b in &cfg.bpf {
            let alg = bpfcc::Algorithm::from_name(&b.algorithm).expect("checked");
            bpf.push(bpfcc::register(alg, &b.name)?);
        }
        let mut tuns = Vec::with_capacity(cfg.hosts.len());
        for h in &cfg.hosts {
            tuns.extend(host_setup(h, cfg.datapath)?);
        }
        // With the veth data path the Python backend has set up devices, addresses and
        // routes already.
        for h in cfg.hosts.iter().filter(|_| cfg.datapath == Datapath::Tun) {
            let opts = h.route_options.join(" ");
            let script = format!(
                "link set lo up\nlink set dev {tun} mtu 1500 up\naddr add {addr}/32 dev {tun}\n\
                 route add {route} dev {tun} src {addr} {opts}\n",
                tun = h.dev,
                addr = h.addr,
                route = h.route,
            );
            run_ip(&h.netns, &script)?;
        }
        Ok(Emulation {
            cfg,
            tuns,
            bpf,
            control: Arc::new(Control::default()),
            setup_started,
        })
    }

    /// The handle through which another thread can stop the run.
    pub fn control(&self) -> Arc<Control> {
        self.control.clone()
    }

    /// Run the scenario in real time. Returns when the duration has passed, or with an error
    /// after a stop request or a failure (every thread is joined either way).
    pub fn run(self) -> Result<EmuResult, EmuError> {
        self.run_inner()
    }

    fn run_inner(&self) -> Result<EmuResult, EmuError> {
        let cfg = &self.cfg;
        let ctl = &self.control;
        let fwd = match cfg.datapath {
            Datapath::Tun => Some(self.start_forwarder()?),
            Datapath::Veth => None,
        };
        // However this function returns, no thread of the run is left running.
        let _guard = StopOnDrop(ctl.clone());
        let (tx, rx) = mpsc::channel::<Progress>();
        let n = cfg.spec.flows.len();
        let setup = SetupTimes {
            timeline: timeline(&cfg.spec),
            starts_ns: cfg.spec.flow_starts_ns(),
            connect_timeout_ns: connect_timeout_ns(cfg),
        };
        let receivers = self.start_receivers(&setup, &tx)?;
        wait_for(&rx, ctl, &setup, "the receivers to listen", n, |p| {
            matches!(p, Progress::Listening(_))
        })?;
        let senders = self.start_senders(&setup, &tx)?;
        // Every sender's socket exists; each connects at its flow's start.
        wait_for(&rx, ctl, &setup, "the senders' sockets", n, |p| {
            matches!(p, Progress::Ready(_))
        })?;
        let setup_s = (sys::monotonic_ns() - self.setup_started) as f64 / 1e9;
        let t0 = sys::monotonic_ns() + cfg.options.start_margin_ms * 1_000_000;
        let cpu0 = sys::process_cpu_ns();
        ctl.set_t0(t0);

        let (s_out, r_out, report) = join_run(ctl, fwd, senders, receivers)?;
        let report = report.unwrap_or_else(|| veth_report(cfg, &s_out, &r_out));
        let selfcheck = self.self_check(&s_out, &r_out, &report, t0, cpu0, setup_s);
        let result = assemble(cfg, &s_out, &r_out, report);
        Ok(EmuResult { result, selfcheck })
    }

    /// Start the forwarder's thread, at real-time priority when asked and allowed.
    fn start_forwarder(&self) -> Result<thread::JoinHandle<ForwarderReport>, EmuError> {
        let cfg = &self.cfg;
        let opts = cfg.options.clone();
        let forwarder = Forwarder::new(cfg, self.tuns.iter().map(|f| f.as_raw_fd()).collect())?;
        let fwd_ctl = self.control.clone();
        let fwd_name = format!("ccf{}-fw", cfg.tag);
        thread::Builder::new()
            .name(fwd_name.clone())
            .spawn(move || -> ForwarderReport {
                sys::set_thread_name(&fwd_name);
                let _ = sys::set_timer_slack(opts.timer_slack_ns);
                let realtime =
                    opts.realtime_priority > 0 && sys::set_fifo(opts.realtime_priority).is_ok();
                forwarder.run(&fwd_ctl, realtime)
            })
            .map_err(|e| EmuError::os("starting the forwarder", e))
    }

    /// Start one receiver thread per flow, in its `dst` host's namespace.
    fn start_receivers(
        &self,
        setup: &SetupTimes,
        tx: &mpsc::Sender<Progress>,
    ) -> Result<Vec<Worker<ReceiverOut>>, EmuError> {
        let cfg = &self.cfg;
        let opts = &cfg.options;
        let mut receivers = Vec::with_capacity(cfg.spec.flows.len());
        for (i, f) in cfg.spec.flows.iter().enumerate() {
            let host = cfg.host_of(f.dst).expect("checked");
            let plan = ReceiverPlan {
                flow: i,
                netns: host.netns.clone(),
                thread_name: format!("ccf{}-r{i}", cfg.tag),
                listen: SocketAddrV4::new(host.addr, cfg.flows[i].port),
                timer_slack_ns: opts.timer_slack_ns,
                priority: opts.traffic_priority,
                start_ns: setup.starts_ns[i],
                accept_timeout_ns: setup.connect_timeout_ns + 1_000_000_000,
            };
            let (c, t, tl) = (self.control.clone(), tx.clone(), setup.timeline);
            receivers.push(
                thread::Builder::new()
                    .name(plan.thread_name.clone())
                    .spawn(move || {
                        traffic::receiver(plan, tl, c.clone(), t).inspect_err(|e| c.fail(e.clone()))
                    })
                    .map_err(|e| EmuError::os("starting a receiver", e))?,
            );
        }
        Ok(receivers)
    }

    /// Start one sender thread per flow, in its `src` host's namespace.
    fn start_senders(
        &self,
        setup: &SetupTimes,
        tx: &mpsc::Sender<Progress>,
    ) -> Result<Vec<Worker<SenderOut>>, EmuError> {
        let mut senders = Vec::with_capacity(self.cfg.spec.flows.len());
        for i in 0..self.cfg.spec.flows.len() {
            let plan = self.sender_plan(i, setup)?;
            let (c, t, tl) = (self.control.clone(), tx.clone(), setup.timeline);
            senders.push(
                thread::Builder::new()
                    .name(plan.thread_name.clone())
                    .spawn(move || {
                        traffic::sender(plan, tl, c.clone(), t).inspect_err(|e| c.fail(e.clone()))
                    })
                    .map_err(|e| EmuError::os("starting a sender", e))?,
            );
        }
        Ok(senders)
    }

    /// What the sender of flow `i` needs: its host, algorithm, peer and times.
    fn sender_plan(&self, i: usize, setup: &SetupTimes) -> Result<SenderPlan, EmuError> {
        let cfg = &self.cfg;
        let f = &cfg.spec.flows[i];
        let src = cfg.host_of(f.src).expect("checked");
        let dst = cfg.host_of(f.dst).expect("checked");
        Ok(SenderPlan {
            flow: i,
            netns: src.netns.clone(),
            thread_name: format!("ccf{}-s{i}", cfg.tag),
            cca: cfg.flows[i].kernel_cca.clone(),
            bpf: self.bpf_flow(i)?,
            to: SocketAddrV4::new(dst.addr, cfg.flows[i].port),
            start_ns: setup.starts_ns[i],
            stop_ns: f.stop_ns,
            size_bytes: f.size_bytes,
            timer_slack_ns: cfg.options.timer_slack_ns,
            priority: cfg.options.traffic_priority,
            connect_timeout_ns: setup.connect_timeout_ns,
        })
    }

    /// The BPF congestion control flow `i` runs, with its parameters as the program's
    /// initial socket storage; None for a flow on one of the kernel's own modules.
    fn bpf_flow(&self, i: usize) -> Result<Option<traffic::BpfFlow>, EmuError> {
        let Some(b) = self.cfg.bpf_of(i) else {
            return Ok(None);
        };
        let reg = self
            .bpf
            .iter()
            .find(|r| r.name == b.name)
            .expect("registered");
        Ok(Some(traffic::BpfFlow {
            algorithm: reg.algorithm,
            storage_fd: reg.storage_fd(),
            initial_value: bpfcc::initial_value(reg.algorithm, &self.cfg.spec.flows[i].cca_params)
                .map_err(|e| EmuError::bpf(format!("flows[{i}].cca_params"), e))?,
        }))
    }

    /// The emulation's self-checks, taken right after every thread has been joined.
    fn self_check(
        &self,
        s_out: &[SenderOut],
        r_out: &[ReceiverOut],
        report: &ForwarderReport,
        t0: u64,
        cpu0: u64,
        setup_s: f64,
    ) -> SelfCheck {
        let wall_s = (sys::monotonic_ns().saturating_sub(t0)) as f64 / 1e9;
        let process_cpu_frac = if wall_s > 0.0 {
            (sys::process_cpu_ns() - cpu0) as f64 / 1e9 / wall_s
        } else {
            f64::NAN
        };
        let missed = s_out.iter().map(|s| s.missed_samples).sum::<u64>()
            + r_out.iter().map(|r| r.missed_ticks).sum::<u64>();
        let mut sampling = Histogram::default();
        for s in s_out {
            for smp in &s.samples {
                sampling.record(
                    smp.t_ns
                        .saturating_sub(smp.k * self.cfg.spec.sample_interval_ns),
                );
            }
        }
        SelfCheck {
            forwarder: report.stats.clone(),
            process_cpu_frac,
            missed_samples: missed,
            sampling_lateness: sampling.summary(),
            kernel_ccas: self
                .cfg
                .flows
                .iter()
                .map(|f| f.kernel_cca.clone())
                .collect(),
            wall_s,
            setup_s,
            connect_s: s_out.iter().map(|s| ns_to_s(s.connect_ns)).collect(),
            established_s: s_out.iter().map(|s| ns_to_s(s.established_ns)).collect(),
        }
    }
}

/// A sender's or receiver's thread.
type Worker<T> = thread::JoinHandle<Result<T, EmuError>>;

/// The times the setup hands every flow's threads.
struct SetupTimes {
    timeline: Timeline,
    /// Each flow's start with its jitter (ns after t = 0).
    starts_ns: Vec<u64>,
    /// How long after its start a flow's connection may take to be established.
    connect_timeout_ns: u64,
}

fn timeline(spec: &RunSpec) -> Timeline {
    Timeline {
        sample_interval_ns: spec.sample_interval_ns,
        duration_ns: spec.duration_ns,
        measure_start_ns: spec.measure_start_ns,
        measure_end_ns: spec.measure_end_ns,
    }
}

/// The option's connect timeout plus four round-trip propagation times of the slowest
/// path (data path plus ACK path).
fn connect_timeout_ns(cfg: &EmuConfig) -> u64 {
    let spec = &cfg.spec;
    let max_rtt_ns = spec
        .flows
        .iter()
        .map(|f| {
            f.path
                .iter()
                .chain(&f.ack_path)
                .map(|&c| spec.links[c / 2].delay_ns)
                .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    cfg.options.connect_timeout_ms * 1_000_000 + 4 * max_rtt_ns
}

/// Wait until `count` workers have reported the progress `pick` accepts; fail on a
/// worker's failure, a stop request, or when nothing came for the connect timeout plus 2 s.
fn wait_for(
    rx: &mpsc::Receiver<Progress>,
    ctl: &Control,
    setup: &SetupTimes,
    what: &'static str,
    count: usize,
    pick: impl Fn(&Progress) -> bool,
) -> Result<(), EmuError> {
    let mut got = 0;
    let limit = std::time::Duration::from_nanos(setup.connect_timeout_ns + 2_000_000_000);
    while got < count {
        match rx.recv_timeout(limit) {
            Ok(Progress::Failed(e)) => return Err(e),
            Ok(p) if pick(&p) => got += 1,
            Ok(_) => {}
            Err(_) => return Err(EmuError::SetupTimeout { waiting_for: what }),
        }
        if ctl.stopped() {
            return Err(ctl.failure().unwrap_or(EmuError::Interrupted));
        }
    }
    Ok(())
}

/// What every thread of a run returned: senders', receivers', and the forwarder's report
/// (none on the veth data path).
type Joined = (Vec<SenderOut>, Vec<ReceiverOut>, Option<ForwarderReport>);

/// Join every thread of the run (senders, receivers, then the forwarder if any); the first
/// failure any of them recorded, or a stop request, is the run's error.
fn join_run(
    ctl: &Control,
    fwd: Option<thread::JoinHandle<ForwarderReport>>,
    senders: Vec<Worker<SenderOut>>,
    receivers: Vec<Worker<ReceiverOut>>,
) -> Result<Joined, EmuError> {
    let sender_out: Vec<Result<SenderOut, EmuError>> =
        senders.into_iter().map(join_worker).collect();
    let receiver_out: Vec<Result<ReceiverOut, EmuError>> =
        receivers.into_iter().map(join_worker).collect();
    let report = fwd
        .map(|f| {
            f.join().map_err(|_| EmuError::Panicked {
                thread: "the forwarder",
            })
        })
        .transpose()?;
    if let Some(e) = ctl.failure() {
        return Err(e);
    }
    if ctl.stopped() {
        return Err(EmuError::Interrupted);
    }
    let s_out: Vec<SenderOut> = sender_out.into_iter().collect::<Result<_, _>>()?;
    let r_out: Vec<ReceiverOut> = receiver_out.into_iter().collect::<Result<_, _>>()?;
    Ok((s_out, r_out, report))
}

/// What stands in for the forwarder's report on the veth data path, where the kernel
/// carries the packets: per flow, the counts both ends' `tcp_info` give (data segments sent
/// and received, segments the receiver sent and the sender received); no link samples, no
/// trace; link summaries with the spec's rates, delays and buffers and zero counters, which
/// the Python backend fills from the qdiscs' own counters (python/ccfair/veth.py).
fn veth_report(cfg: &EmuConfig, s_out: &[SenderOut], r_out: &[ReceiverOut]) -> ForwarderReport {
    let spec = &cfg.spec;
    let flows = s_out
        .iter()
        .zip(r_out)
        .map(|(s, r)| {
            // Segments sent and not received: dropped by a queue, or still in flight when
            // the ends read their counters (docs/kernel.md, "The veth data path").
            FlowCounts {
                data_in: s.data_segs_out,
                data_delivered: r.data_segs_in,
                data_dropped: s.data_segs_out.saturating_sub(r.data_segs_in),
                acks_in: r.segs_out,
                acks_delivered: s.segs_in.min(r.segs_out),
                acks_dropped: r.segs_out.saturating_sub(s.segs_in),
                syns_in: u64::from(s.connect_ns.is_some()),
                syn_in_ns: s.connect_ns,
                synack_delivered_ns: s.established_ns,
                first_data_in_ns: None,
            }
        })
        .collect();
    let zeros = vec![ChannelCounters::default(); 2 * spec.links.len()];
    let unknown = record::LinkExtras {
        sojourn_ms: [f64::NAN; 3],
        fq_shared_flows: f64::NAN,
    };
    let extras = vec![unknown; 2 * spec.links.len()];
    let rows = record::link_summaries(spec, &zeros, &zeros, &LinkSamples::default(), &extras);
    ForwarderReport {
        links: LinkSamples::default().into_table(),
        trace: None,
        link_summary: record::link_summary_table(&rows),
        flows,
        stats: ForwarderStats::default(),
        in_network: vec![(0, 0); spec.flows.len()],
    }
}

/// Seconds, or NaN for a time that never came.
fn ns_to_s(t: Option<u64>) -> f64 {
    t.map_or(f64::NAN, |t| t as f64 / 1e9)
}

/// A worker's result; its panic as an error.
fn join_worker<T>(h: thread::JoinHandle<Result<T, EmuError>>) -> Result<T, EmuError> {
    h.join().unwrap_or(Err(EmuError::Panicked {
        thread: "a worker thread",
    }))
}

/// Stops every thread of the run when the driver returns, whichever way it returns.
struct StopOnDrop(Arc<Control>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.request_stop();
    }
}

/// The run's tables, filled through the simulator's recorder (`ccfair_sim::record`) from
/// what the senders, receivers and the forwarder measured.
fn assemble(
    cfg: &EmuConfig,
    senders: &[SenderOut],
    receivers: &[ReceiverOut],
    report: ForwarderReport,
) -> RunResult {
    let spec = &cfg.spec;
    let samples = flow_samples(senders, receivers);
    let mut rows: Vec<FlowSummary> = (0..spec.flows.len())
        .map(|i| flow_summary(cfg, i, &senders[i], &receivers[i], &report))
        .collect();
    record::fill_flow_delays(spec, &samples.samples, &mut rows);
    let linux = linux_counters(cfg, senders);
    // Counters of ccfair's BPF programs (empty for the kernel's own modules): the names the
    // simulator's algorithms report plus the programs' own (`schema::BPF_COUNTERS`).
    let counters: Vec<Vec<(&'static str, f64)>> =
        senders.iter().map(|s| s.bpf_counters.clone()).collect();
    let stats = EngineStats {
        events: report.stats.events,
        packet_hops: report.stats.packet_hops,
        peak_heap_len: report.stats.peak_heap_len,
        // Not measured here: the kernel holds the flows' packets.
        packet_state_bytes: 0,
        peak_packets: 0,
    };
    RunResult {
        flows: record::flows_table(&rows, Some(&linux), &counters),
        timeseries: samples.into_table(),
        links: report.links,
        link_summary: report.link_summary,
        trace: report.trace,
        stats,
    }
}

/// One flow's summary row. Counters Linux keeps per namespace (TcpExt,
/// include/uapi/linux/snmp.h) are the host's: see docs/kernel.md.
fn flow_summary(
    cfg: &EmuConfig,
    i: usize,
    s: &SenderOut,
    r: &ReceiverOut,
    report: &ForwarderReport,
) -> FlowSummary {
    let spec = &cfg.spec;
    let window_ns = (spec.measure_end_ns - spec.measure_start_ns) as f64;
    let start_ns = spec.flow_starts_ns()[i];
    let ns = |keys: &[&str]| -> u64 {
        keys.iter()
            .map(|k| s.netstat.get(*k).copied().unwrap_or(0))
            .sum()
    };
    let f = &report.flows[i];
    let window_bytes = r.bytes_at_measure_end - r.bytes_at_measure_start;
    let c = connection_columns(&ConnectionTimes {
        syn_sent_ns: f.syn_in_ns,
        synack_delivered_ns: f.synack_delivered_ns,
        first_data_sent_ns: f.first_data_in_ns,
        syns_sent: f.syns_in,
    });
    FlowSummary {
        flow: i as u64,
        delivered_bytes: r.bytes_total,
        window_delivered_bytes: window_bytes,
        goodput_mbps: window_bytes as f64 * 8e3 / window_ns,
        data_sent_pkts: f.data_in,
        data_received_pkts: f.data_delivered,
        data_dropped_pkts: f.data_dropped,
        data_in_network_pkts: report.in_network[i].0,
        retrans_pkts: s.total_retrans,
        rto_count: s.total_rto,
        tlp_count: ns(&["TCPLossProbes"]),
        recovery_count: ns(&["TCPSackRecovery", "TCPRenoRecovery"]),
        undo_count: ns(&[
            "TCPFullUndo",
            "TCPPartialUndo",
            "TCPDSACKUndo",
            "TCPLossUndo",
        ]),
        ack_sent_pkts: f.acks_in,
        ack_dropped_pkts: f.acks_dropped,
        rtt_mean_ms: s.mean_srtt_us / 1e3,
        rtt_min_ms: s.min_rtt_us / 1e3,
        rtt_p50_ms: f64::NAN,
        rtt_p95_ms: f64::NAN,
        rtt_p99_ms: f64::NAN,
        qdelay_mean_ms: f64::NAN,
        qdelay_p50_ms: f64::NAN,
        qdelay_p95_ms: f64::NAN,
        qdelay_p99_ms: f64::NAN,
        completion_time_s: match (spec.flows[i].size_bytes, r.eof_ns) {
            (Some(_), Some(t)) => (t.saturating_sub(start_ns)) as f64 / 1e9,
            _ => f64::NAN,
        },
        syn_sent_s: c.syn_sent_s,
        first_data_sent_s: c.first_data_sent_s,
        handshake_rtt_ms: c.handshake_rtt_ms,
        syn_retrans_pkts: c.syn_retrans_pkts,
        // ECN as the hosts' sockets report it (docs/kernel.md, "ECN"): whether the sender's
        // connection negotiated it, and the CE-marked segments the receiver's socket saw
        // (Linux 6.18's tcpi_received_ce; NaN before 6.18). Linux counts no ACKs with ECE
        // (its tcpi_delivered_ce counts the packets they acknowledge) and no reductions for
        // ECE, per socket or per namespace: those two stay NaN.
        ecn_negotiated: if s.ecn_negotiated { 1.0 } else { 0.0 },
        ce_received_pkts: r.received_ce.map_or(f64::NAN, |n| n as f64),
        ece_received_pkts: f64::NAN,
        ecn_reduction_count: f64::NAN,
    }
}

/// Linux's own counters per flow, in the order of `ccfair_sim::schema::LINUX_COUNTERS`.
fn linux_counters(cfg: &EmuConfig, senders: &[SenderOut]) -> Vec<Vec<f64>> {
    let spec = &cfg.spec;
    // Sending flows per host: namespace counters belong to a flow only if it is alone.
    let mut senders_per_node = vec![0usize; spec.nodes.len()];
    for f in &spec.flows {
        senders_per_node[f.src] += 1;
    }
    senders
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let host_alone = senders_per_node[spec.flows[i].src] == 1;
            vec![
                s.data_segs_out as f64,
                s.bytes_retrans as f64,
                s.total_rto_recoveries as f64,
                s.dsack_dups as f64,
                s.reord_seen as f64,
                if host_alone { 0.0 } else { 1.0 },
            ]
        })
        .collect()
}

/// The time series, ordered by grid point then flow as the simulator's.
fn flow_samples(senders: &[SenderOut], receivers: &[ReceiverOut]) -> FlowRecorder {
    let mut rows: Vec<(u64, usize, usize)> = Vec::new();
    for (i, s) in senders.iter().enumerate() {
        for (j, smp) in s.samples.iter().enumerate() {
            rows.push((smp.k, i, j));
        }
    }
    rows.sort_unstable();
    let goodput_at: Vec<std::collections::HashMap<u64, f64>> = receivers
        .iter()
        .map(|r| {
            r.ticks
                .windows(2)
                .map(|w| {
                    let dt = w[1].t_ns.saturating_sub(w[0].t_ns).max(1);
                    (w[1].k, (w[1].bytes - w[0].bytes) as f64 * 8e3 / dt as f64)
                })
                .collect()
        })
        .collect();
    let mut rec = FlowRecorder::new();
    let mut internals = Vec::with_capacity(16);
    for &(k, i, j) in &rows {
        let smp = &senders[i].samples[j];
        let s = &smp.sample;
        let row = FlowSample {
            t_ns: smp.t_ns,
            t_s: smp.t_ns as f64 / 1e9,
            flow: i as u64,
            cwnd_pkts: s.cwnd_pkts,
            ssthresh_pkts: s.ssthresh_pkts,
            inflight_pkts: s.inflight_pkts,
            srtt_ms: s.srtt_us / 1e3,
            min_rtt_ms: s.min_rtt_us / 1e3,
            rto_ms: s.rto_us / 1e3,
            pacing_rate_mbps: s.pacing_rate_bps / 1e6,
            delivery_rate_mbps: s.delivery_rate_bps / 1e6,
            goodput_mbps: goodput_at[i].get(&k).copied().unwrap_or(f64::NAN),
            retrans_pkts: s.retrans_pkts,
            tcp_ca_state: s.ca_state,
            cca_state: s.cca_state,
        };
        internals.clear();
        // A BPF program's internals, read from its socket storage under the simulator's
        // names and units (crates/ccfair-emu/src/bpfcc.rs); empty for the kernel's modules.
        internals.extend_from_slice(&smp.bpf);
        if let Some(b) = s.bbr {
            // TCP_CC_INFO's BBR fields under the simulator's names and units
            // (crates/ccfair-cc/src/bbr: payload bit/s and us); the recorder stores them in
            // table units.
            let unit = crate::tcpinfo::BBR_UNIT as f64;
            internals.extend_from_slice(&[
                ("bbr_btl_bw_bps", b.bw_bytes_per_sec as f64 * 8.0),
                ("bbr_rtprop_us", b.min_rtt_us as f64),
                ("bbr_pacing_gain", b.pacing_gain as f64 / unit),
                ("bbr_cwnd_gain", b.cwnd_gain as f64 / unit),
            ]);
        }
        rec.push(&row, &internals);
    }
    rec
}
