//! ccfair's own bulk sender and receiver, one pair per flow, each a thread inside its host's
//! network namespace.
//!
//! The sender sets TCP_CONGESTION on its socket to the flow's algorithm before connecting,
//! writes from its start time until its stop time (or until `size` bytes), and samples
//! TCP_INFO and TCP_CC_INFO on its own socket every `sample_interval` on the grid
//! t0 + k x interval. The receiver reads as fast as the kernel delivers and records the bytes
//! delivered to the application on the same grid and at the edges of the measurement window.
//! Both use CLOCK_MONOTONIC, which all namespaces share.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use crate::bpfcc::{self, Algorithm};
use crate::error::EmuError;
use crate::forwarder::Control;
use crate::grid::Grid;
use crate::sys;
use crate::tcpinfo::{BbrInfo, Sample, TcpInfo};

/// Write chunk of the sender and read buffer of the receiver.
const IO_CHUNK: usize = 256 * 1024;
/// How often threads waiting for something look at the stop flag.
const POLL_SLICE_NS: u64 = 2_000_000;

/// Setup progress, reported to the thread that drives the run.
#[derive(Debug)]
pub enum Progress {
    /// A receiver listens.
    Listening(usize),
    /// A sender's socket exists with its congestion control set.
    Ready(usize),
    /// A worker failed to set up (its error is also the thread's result).
    Failed(EmuError),
}

/// What a flow needs to know about the run's timeline (ns, relative to t0).
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    /// Interval of the time series, ns.
    pub sample_interval_ns: u64,
    /// Length of the run, ns.
    pub duration_ns: u64,
    /// Start of the measurement window, ns.
    pub measure_start_ns: u64,
    /// End of the measurement window, ns.
    pub measure_end_ns: u64,
}

/// What the sender thread of one flow needs: where it runs, what it runs, where it
/// connects, when and how much it writes.
#[derive(Clone, Debug)]
pub struct SenderPlan {
    /// The flow's index in the spec.
    pub flow: usize,
    /// The namespace of the flow's source host.
    pub netns: String,
    /// The thread's name (`ccf<tag>-s<flow>`), for `ps -L`.
    pub thread_name: String,
    /// The Linux congestion control set with TCP_CONGESTION.
    pub cca: String,
    /// Set when `cca` is one of ccfair's BPF congestion controls.
    pub bpf: Option<BpfFlow>,
    /// The receiver's address and port.
    pub to: SocketAddrV4,
    /// When to connect, ns after t = 0 (the flow's start with its jitter).
    pub start_ns: u64,
    /// When the application stops writing, ns after t = 0 (`None`: at the end).
    pub stop_ns: Option<u64>,
    /// Bytes to write in all (`None`: a bulk flow).
    pub size_bytes: Option<u64>,
    /// The thread's timer slack, ns.
    pub timer_slack_ns: u64,
    /// `SCHED_FIFO` priority (0: the ordinary scheduler).
    pub priority: u32,
    /// How long connect() may take after the flow's start, ns.
    pub connect_timeout_ns: u64,
}

/// What a sender needs to run one of ccfair's BPF congestion controls on its socket.
#[derive(Clone, Debug)]
pub struct BpfFlow {
    /// The program.
    pub algorithm: Algorithm,
    /// The program's socket-storage map (valid for the run).
    pub storage_fd: std::os::fd::RawFd,
    /// Parameters and zero state, written into the socket's storage before connect().
    pub initial_value: Vec<u8>,
}

/// What the receiver thread of one flow needs: where it runs and where it listens.
#[derive(Clone, Debug)]
pub struct ReceiverPlan {
    /// The flow's index in the spec.
    pub flow: usize,
    /// The namespace of the flow's destination host.
    pub netns: String,
    /// The thread's name (`ccf<tag>-r<flow>`).
    pub thread_name: String,
    /// The address and port to listen on.
    pub listen: SocketAddrV4,
    /// The thread's timer slack, ns.
    pub timer_slack_ns: u64,
    /// `SCHED_FIFO` priority (0: the ordinary scheduler).
    pub priority: u32,
    /// The flow's start (ns after t = 0): its sender connects then.
    pub start_ns: u64,
    /// Give up if nothing connected this long after the flow's start.
    pub accept_timeout_ns: u64,
}

/// One TCP_INFO sample: the grid index k, when it was taken (ns after t0) and its values.
#[derive(Clone, Debug)]
pub struct SenderSample {
    /// The grid point: the sample is due at t0 + k x interval.
    pub k: u64,
    /// When it was taken, ns after t0.
    pub t_ns: u64,
    /// The socket's state in the time series' units.
    pub sample: Sample,
    /// A BPF algorithm's internals (empty otherwise), under the simulator's column names.
    pub bpf: Vec<(&'static str, f64)>,
}

/// What a sender measured over the run.
#[derive(Clone, Debug, Default)]
pub struct SenderOut {
    /// The samples, one per grid point reached.
    pub samples: Vec<SenderSample>,
    /// Grid points that passed while the thread was late by a whole interval or more.
    pub missed_samples: u64,
    /// Bytes the application wrote.
    pub bytes_written: u64,
    /// When the application called connect() and when connect() completed (ns after t0).
    pub connect_ns: Option<u64>,
    /// When connect() completed, ns after t0 (`None`: never).
    pub established_ns: Option<u64>,
    /// The socket's final `tcp_info`: `tcpi_total_retrans`, and the counters below.
    pub total_retrans: u64,
    /// `tcpi_total_rto`.
    pub total_rto: u64,
    /// `tcpi_total_rto_recoveries`.
    pub total_rto_recoveries: u64,
    /// `tcpi_data_segs_out`.
    pub data_segs_out: u64,
    /// Segments received (ACKs, the SYN-ACK included).
    pub segs_in: u64,
    /// `tcpi_bytes_retrans`.
    pub bytes_retrans: u64,
    /// `tcpi_dsack_dups`.
    pub dsack_dups: u64,
    /// `tcpi_reord_seen`.
    pub reord_seen: u64,
    /// `tcpi_min_rtt`, µs (NaN without a sample).
    pub min_rtt_us: f64,
    /// The connection negotiated ECN (`tcpi_options & TCPI_OPT_ECN`).
    pub ecn_negotiated: bool,
    /// Mean of the srtt samples (a time average at the sampling interval).
    pub mean_srtt_us: f64,
    /// TcpExt counters of the sender's namespace over the run (end minus start).
    pub netstat: BTreeMap<String, u64>,
    /// A BPF algorithm's counters at the end (the simulator's `summary_counters`).
    pub bpf_counters: Vec<(&'static str, f64)>,
}

/// Bytes delivered to the receiving application at one grid point.
#[derive(Clone, Copy, Debug)]
pub struct Tick {
    /// The grid point: t0 + k x interval.
    pub k: u64,
    /// When it was taken, ns after t0.
    pub t_ns: u64,
    /// Bytes delivered so far.
    pub bytes: u64,
}

/// What a receiver measured over the run.
#[derive(Clone, Debug, Default)]
pub struct ReceiverOut {
    /// Bytes delivered at each grid point reached (point 0 at t = 0).
    pub ticks: Vec<Tick>,
    /// Grid points that passed while the thread was late by a whole interval or more.
    pub missed_ticks: u64,
    /// Bytes delivered to the application over the run.
    pub bytes_total: u64,
    /// Bytes delivered when the measurement window opened.
    pub bytes_at_measure_start: u64,
    /// Bytes delivered when the measurement window closed.
    pub bytes_at_measure_end: u64,
    /// When the sender's FIN arrived (ns after t0), for flows with a size.
    pub eof_ns: Option<u64>,
    /// The receiving socket's final `tcp_info`: data segments received, segments sent
    /// (ACKs, the SYN-ACK included).
    pub data_segs_in: u64,
    /// `tcpi_segs_out` of the receiving socket.
    pub segs_out: u64,
    /// CE-marked segments the receiving socket saw (`tcpi_received_ce`); None when the
    /// kernel's `tcp_info` has no such field (before Linux 6.18).
    pub received_ce: Option<u64>,
}

fn wait_t0(ctl: &Control) -> Result<u64, EmuError> {
    loop {
        if ctl.stopped() {
            return Err(EmuError::Stopped { before_start: true });
        }
        if let Some(t0) = ctl.t0() {
            return Ok(t0);
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

fn enter(netns: &str, thread_name: &str, slack_ns: u64, priority: u32) -> Result<(), EmuError> {
    sys::set_thread_name(thread_name);
    let _ = sys::set_timer_slack(slack_ns);
    if priority > 0 {
        // Best effort: without CAP_SYS_NICE the thread keeps the ordinary scheduler.
        let _ = sys::set_fifo(priority);
    }
    let path = Path::new("/run/netns").join(netns);
    sys::enter_netns(&path).map_err(|e| EmuError::os(format!("entering namespace {netns}"), e))
}

/// (name -> value) of the `TcpExt:` lines of /proc/thread-self/net/netstat: the counters of
/// the calling thread's network namespace (proc(5)).
fn read_netstat() -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string("/proc/thread-self/net/netstat") else {
        return out;
    };
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        if let [names, values] = pair {
            if names.starts_with("TcpExt:") && values.starts_with("TcpExt:") {
                for (n, v) in names
                    .split_whitespace()
                    .zip(values.split_whitespace())
                    .skip(1)
                {
                    if let Ok(v) = v.parse() {
                        out.insert(n.to_string(), v);
                    }
                }
            }
        }
    }
    out
}

/// The receiver of one flow: listen before t = 0; from t = 0 on, accept the connection
/// when it comes (the sender connects at its flow's start) and count delivered bytes on the
/// grid.
pub fn receiver(
    plan: ReceiverPlan,
    tl: Timeline,
    ctl: Arc<Control>,
    progress: mpsc::Sender<Progress>,
) -> Result<ReceiverOut, EmuError> {
    let listener = match receiver_socket(&plan) {
        Ok(l) => l,
        Err(e) => {
            let _ = progress.send(Progress::Failed(e.clone()));
            return Err(e);
        }
    };
    let _ = progress.send(Progress::Listening(plan.flow));
    let t0 = wait_t0(&ctl)?;
    let mut run = ReceiverRun::new(&plan, tl, t0, listener);
    loop {
        if ctl.stopped() {
            return Err(EmuError::Stopped {
                before_start: false,
            });
        }
        if run.stream.is_none() {
            run.accept()?;
        }
        run.read()?;
        let now = sys::monotonic_ns();
        run.record(now);
        if now >= run.end_ns && !run.grid.pending() && run.measure_end_done {
            break;
        }
        run.wait()?;
    }
    if let Some(stream) = &run.stream {
        if let Ok((info, len)) = sys::tcp_info_len(stream.as_raw_fd()) {
            run.out.data_segs_in = u64::from(info.tcpi_data_segs_in);
            run.out.segs_out = u64::from(info.tcpi_segs_out);
            run.out.received_ce =
                TcpInfo::has_received_ce(len).then(|| u64::from(info.tcpi_received_ce));
        }
    }
    Ok(run.out)
}

/// The flow's listening socket, in its host's namespace.
fn receiver_socket(plan: &ReceiverPlan) -> Result<TcpListener, EmuError> {
    let f = plan.flow;
    enter(
        &plan.netns,
        &plan.thread_name,
        plan.timer_slack_ns,
        plan.priority,
    )?;
    let listener = TcpListener::bind(plan.listen)
        .map_err(|e| EmuError::os(format!("flows[{f}]: listen on {}", plan.listen), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| EmuError::os(format!("flows[{f}]: O_NONBLOCK"), e))?;
    Ok(listener)
}

/// A receiver's state from t = 0 to the end of the run.
struct ReceiverRun<'a> {
    plan: &'a ReceiverPlan,
    tl: Timeline,
    listener: TcpListener,
    /// The flow's connection, once accepted.
    stream: Option<TcpStream>,
    t0_ns: u64,
    end_ns: u64,
    accept_deadline_ns: u64,
    grid: Grid,
    out: ReceiverOut,
    measure_start_done: bool,
    measure_end_done: bool,
    /// The sender's FIN has arrived.
    eof: bool,
    buf: Vec<u8>,
}

impl<'a> ReceiverRun<'a> {
    fn new(plan: &'a ReceiverPlan, tl: Timeline, t0: u64, listener: TcpListener) -> Self {
        ReceiverRun {
            plan,
            tl,
            listener,
            stream: None,
            t0_ns: t0,
            end_ns: t0 + tl.duration_ns,
            accept_deadline_ns: t0 + plan.start_ns + plan.accept_timeout_ns,
            // Point 0 is taken at t = 0 (nothing delivered yet).
            grid: Grid::new(t0, tl.sample_interval_ns, tl.duration_ns, 1),
            out: ReceiverOut {
                ticks: vec![Tick {
                    k: 0,
                    t_ns: 0,
                    bytes: 0,
                }],
                ..Default::default()
            },
            measure_start_done: tl.measure_start_ns == 0,
            measure_end_done: false,
            eof: false,
            buf: vec![0u8; IO_CHUNK],
        }
    }

    /// Accept the flow's connection if it has come; fail once it is overdue.
    fn accept(&mut self) -> Result<(), EmuError> {
        let f = self.plan.flow;
        match self.listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(true)
                    .map_err(|e| EmuError::os(format!("flows[{f}]: O_NONBLOCK"), e))?;
                self.stream = Some(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if sys::monotonic_ns() > self.accept_deadline_ns {
                    return Err(EmuError::NoConnection {
                        flow: f,
                        listen: self.plan.listen,
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(EmuError::os(format!("flows[{f}]: accept"), e)),
        }
        Ok(())
    }

    /// Read everything the kernel has delivered; note when the sender's FIN arrives.
    fn read(&mut self) -> Result<(), EmuError> {
        let f = self.plan.flow;
        let (Some(s), false) = (self.stream.as_mut(), self.eof) else {
            return Ok(());
        };
        loop {
            match s.read(&mut self.buf) {
                Ok(0) => {
                    self.eof = true;
                    self.out.eof_ns = Some(sys::monotonic_ns().saturating_sub(self.t0_ns));
                    return Ok(());
                }
                Ok(n) => self.out.bytes_total += n as u64,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(EmuError::os(format!("flows[{f}]: read"), e)),
            }
        }
    }

    /// Note the bytes delivered so far at the edges of the measurement window and at a
    /// grid point that is due.
    fn record(&mut self, now: u64) {
        let (t0, tl) = (self.t0_ns, self.tl);
        if !self.measure_start_done && now >= t0 + tl.measure_start_ns {
            self.out.bytes_at_measure_start = self.out.bytes_total;
            self.measure_start_done = true;
        }
        if !self.measure_end_done && now >= t0 + tl.measure_end_ns {
            self.out.bytes_at_measure_end = self.out.bytes_total;
            self.measure_end_done = true;
        }
        if self.grid.due(now) {
            self.out.ticks.push(Tick {
                k: self.grid.k(),
                t_ns: now - t0,
                bytes: self.out.bytes_total,
            });
            self.out.missed_ticks += self.grid.advance(now);
        }
    }

    /// Sleep in poll until data or a connection comes, or the next grid point, window
    /// edge or the end is due (at most `POLL_SLICE_NS`, to look at the stop flag).
    fn wait(&self) -> Result<(), EmuError> {
        let (t0, tl) = (self.t0_ns, self.tl);
        let mut next = self.grid.next_before(self.end_ns);
        if !self.measure_start_done {
            next = next.min(t0 + tl.measure_start_ns);
        }
        if !self.measure_end_done {
            next = next.min(t0 + tl.measure_end_ns);
        }
        let timeout = next.saturating_sub(sys::monotonic_ns()).min(POLL_SLICE_NS);
        let fd = match &self.stream {
            None => self.listener.as_raw_fd(),
            Some(_) if self.eof => -1,
            Some(s) => s.as_raw_fd(),
        };
        let mut p = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        sys::ppoll(&mut p, Some(timeout)).map_err(|e| EmuError::os("poll", e))?;
        Ok(())
    }
}

/// Where a sender is in its connection's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the flow's start: the socket exists, nothing was sent.
    Waiting,
    /// connect() was called at the start: SYN sent, waiting for the handshake to complete.
    Connecting,
    /// Established: the application writes (until its stop time or its size).
    Writing,
    /// The application is done writing.
    Done,
}

/// The sender of one flow: create the socket with the flow's algorithm before t = 0;
/// connect at the flow's start, as an application starts a transfer (the handshake's RTT
/// is Linux's first sample); then write and sample.
pub fn sender(
    plan: SenderPlan,
    tl: Timeline,
    ctl: Arc<Control>,
    progress: mpsc::Sender<Progress>,
) -> Result<SenderOut, EmuError> {
    let stream = match sender_socket(&plan) {
        Ok(s) => s,
        Err(e) => {
            let _ = progress.send(Progress::Failed(e.clone()));
            return Err(e);
        }
    };
    let netstat_before = read_netstat();
    let _ = progress.send(Progress::Ready(plan.flow));
    let t0 = wait_t0(&ctl)?;
    let mut run = SenderRun::new(&plan, tl, t0, stream);
    loop {
        if ctl.stopped() {
            return Err(EmuError::Stopped {
                before_start: false,
            });
        }
        let now = sys::monotonic_ns();
        if run.grid.due(now) {
            run.sample(now)?;
        }
        if now >= run.end_ns && !run.grid.pending() {
            break;
        }
        run.connect(now)?;
        if run.phase == Phase::Writing && now >= run.stop_writing_ns {
            run.phase = Phase::Done;
        }
        if run.phase == Phase::Writing && run.writable {
            run.write()?;
        }
        run.wait()?;
    }
    run.finish(&netstat_before)
}

/// The flow's socket, in its host's namespace, running the flow's congestion control (a
/// BPF program gets the flow's parameters in the socket's storage before connect()).
fn sender_socket(plan: &SenderPlan) -> Result<TcpStream, EmuError> {
    let f = plan.flow;
    enter(
        &plan.netns,
        &plan.thread_name,
        plan.timer_slack_ns,
        plan.priority,
    )?;
    let fd = sys::tcp_socket_with_cca(&plan.cca).map_err(|e| EmuError::CcaRefused {
        flow: f,
        cca: plan.cca.clone(),
        source: Arc::new(e),
    })?;
    let got = sys::congestion_of(fd.as_raw_fd())
        .map_err(|e| EmuError::os(format!("flows[{f}]: TCP_CONGESTION"), e))?;
    if got != plan.cca {
        return Err(EmuError::CcaMismatch {
            flow: f,
            asked: plan.cca.clone(),
            got,
        });
    }
    if let Some(b) = &plan.bpf {
        bpfcc::attach(b.storage_fd, fd.as_raw_fd(), &b.initial_value)
            .map_err(|e| EmuError::bpf(format!("flows[{f}]"), e))?;
    }
    Ok(sys::into_stream(fd))
}

/// A sender's state from t = 0 to the end of the run.
struct SenderRun<'a> {
    plan: &'a SenderPlan,
    stream: TcpStream,
    fd: RawFd,
    t0_ns: u64,
    /// The flow's start, the end of the run and when the application stops writing
    /// (ns on the monotonic clock).
    start_ns: u64,
    end_ns: u64,
    stop_writing_ns: u64,
    /// Read `struct tcp_bbr_info` through TCP_CC_INFO with each sample.
    is_bbr: bool,
    grid: Grid,
    phase: Phase,
    /// The socket took the last write whole, or poll() has reported it writable since it
    /// refused one. Only then does the sender write: an application that writes while
    /// the socket is not writable keeps topping up the unsent tail skb, which
    /// `tcp_sendmsg_locked` (net/ipv4/tcp.c) extends without checking the send buffer
    /// (`sk_stream_memory_free` guards only a new skb), so `sk_wmem_queued` passes
    /// `sk_sndbuf` without bound. iperf waits for writability (select(), or a blocking
    /// write() that sleeps in `sk_stream_wait_memory`), which `tcp_poll` grants once a
    /// third of the buffer is free (`sk_stream_is_writeable`).
    writable: bool,
    out: SenderOut,
    buf: Vec<u8>,
    srtt_sum_us: f64,
    srtt_count: u64,
}

impl<'a> SenderRun<'a> {
    fn new(plan: &'a SenderPlan, tl: Timeline, t0: u64, stream: TcpStream) -> Self {
        let iv = tl.sample_interval_ns;
        SenderRun {
            plan,
            fd: stream.as_raw_fd(),
            stream,
            t0_ns: t0,
            start_ns: t0 + plan.start_ns,
            end_ns: t0 + tl.duration_ns,
            stop_writing_ns: t0 + plan.stop_ns.unwrap_or(tl.duration_ns),
            // Linux's own BBR module reports `struct tcp_bbr_info` through TCP_CC_INFO
            // (tcp_bbr.c bbr_get_info); ccfair's BPF programs report through their storage.
            is_bbr: plan.bpf.is_none() && ccfair_cc::bbr::ALGORITHM.linux_name == Some(&plan.cca),
            // First grid point at or after the start, as the simulator samples started flows.
            grid: Grid::new(t0, iv, tl.duration_ns, plan.start_ns.div_ceil(iv).max(1)),
            phase: Phase::Waiting,
            writable: true,
            out: SenderOut::default(),
            buf: vec![0u8; IO_CHUNK],
            srtt_sum_us: 0.0,
            srtt_count: 0,
        }
    }

    /// Take the grid point due at `now`: TCP_INFO, with BBR's TCP_CC_INFO or a BPF
    /// program's internals.
    fn sample(&mut self, now: u64) -> Result<(), EmuError> {
        let (f, fd) = (self.plan.flow, self.fd);
        let info =
            sys::tcp_info(fd).map_err(|e| EmuError::os(format!("flows[{f}]: TCP_INFO"), e))?;
        let bbr: Option<BbrInfo> = if self.is_bbr {
            sys::bbr_info(fd).map_err(|e| EmuError::os(format!("flows[{f}]: TCP_CC_INFO"), e))?
        } else {
            None
        };
        let mut sample = Sample::from_info(&info, bbr);
        if sample.srtt_us.is_finite() {
            self.srtt_sum_us += sample.srtt_us;
            self.srtt_count += 1;
        }
        // The algorithm starts at the handshake: no internals while connecting.
        let mut internals = Vec::new();
        if let (Some(b), false) = (&self.plan.bpf, sample.cca_state == "connecting") {
            let i = bpfcc::read(b.algorithm, b.storage_fd, fd, info.tcpi_snd_mss)
                .map_err(|e| EmuError::bpf(format!("flows[{f}]"), e))?;
            sample.cca_state = i.state;
            internals = i.metrics;
        }
        self.out.samples.push(SenderSample {
            k: self.grid.k(),
            t_ns: now - self.t0_ns,
            sample,
            bpf: internals,
        });
        self.out.missed_samples += self.grid.advance(now);
        Ok(())
    }

    /// Call connect() at the flow's start; once the handshake has completed, write.
    fn connect(&mut self, now: u64) -> Result<(), EmuError> {
        let (f, fd, to) = (self.plan.flow, self.fd, self.plan.to);
        let refused = |e| EmuError::os(format!("flows[{f}]: connect to {to}"), e);
        if self.phase == Phase::Waiting && now >= self.start_ns {
            self.out.connect_ns = Some(now - self.t0_ns);
            sys::connect_start(fd, to).map_err(refused)?;
            self.phase = Phase::Connecting;
        }
        if self.phase != Phase::Connecting {
            return Ok(());
        }
        let mut p = [libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        }];
        if sys::ppoll(&mut p, Some(0)).map_err(|e| EmuError::os("poll", e))? > 0 {
            let pending =
                sys::so_error(fd).map_err(|e| EmuError::os(format!("flows[{f}]: SO_ERROR"), e))?;
            if let Some(e) = pending {
                return Err(refused(e));
            }
            self.out.established_ns = Some(sys::monotonic_ns() - self.t0_ns);
            self.phase = Phase::Writing;
        } else if now > self.start_ns + self.plan.connect_timeout_ns {
            return Err(EmuError::ConnectTimeout { flow: f, to });
        }
        Ok(())
    }

    /// Write as much as the socket takes, up to the flow's size (then shut down writing).
    fn write(&mut self) -> Result<(), EmuError> {
        let f = self.plan.flow;
        loop {
            let want = match self.plan.size_bytes {
                Some(size) => (size - self.out.bytes_written).min(IO_CHUNK as u64) as usize,
                None => IO_CHUNK,
            };
            if want == 0 {
                let _ = self.stream.shutdown(Shutdown::Write);
                self.phase = Phase::Done;
                return Ok(());
            }
            match self.stream.write(&self.buf[..want]) {
                Ok(n) => {
                    self.out.bytes_written += n as u64;
                    if n < want {
                        // A short write: the send buffer is full (tcp_sendmsg_locked
                        // returns what it copied); wait until poll() says writable.
                        self.writable = false;
                        return Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(EmuError::os(format!("flows[{f}]: write"), e)),
            }
            // Never hold up a due sample behind a long run of writes.
            if self.grid.pending() && sys::monotonic_ns() >= self.grid.point_ns() {
                return Ok(());
            }
        }
    }

    /// Sleep in poll until the socket takes more (while connecting or writing) or the next
    /// grid point, the start, the stop of writing or the end is due (at most
    /// `POLL_SLICE_NS`, to look at the stop flag); note whether it became writable.
    fn wait(&mut self) -> Result<(), EmuError> {
        let mut next = self.grid.next_before(self.end_ns);
        match self.phase {
            Phase::Waiting => next = next.min(self.start_ns),
            Phase::Writing => next = next.min(self.stop_writing_ns),
            Phase::Connecting | Phase::Done => {}
        }
        let timeout = next.saturating_sub(sys::monotonic_ns()).min(POLL_SLICE_NS);
        let mut p = [libc::pollfd {
            fd: if matches!(self.phase, Phase::Connecting | Phase::Writing) {
                self.fd
            } else {
                -1
            },
            events: libc::POLLOUT,
            revents: 0,
        }];
        sys::ppoll(&mut p, Some(timeout)).map_err(|e| EmuError::os("poll", e))?;
        if p[0].revents & libc::POLLOUT != 0 {
            self.writable = true;
        }
        Ok(())
    }

    /// The connection's totals at the end of the run: final `tcp_info` counters, a BPF
    /// program's counters, the mean srtt and the namespace's TcpExt counters over the run.
    fn finish(mut self, netstat_before: &BTreeMap<String, u64>) -> Result<SenderOut, EmuError> {
        let (f, fd, to) = (self.plan.flow, self.fd, self.plan.to);
        if self.phase == Phase::Waiting || self.phase == Phase::Connecting {
            return Err(EmuError::NotEstablished { flow: f, to });
        }
        let info =
            sys::tcp_info(fd).map_err(|e| EmuError::os(format!("flows[{f}]: TCP_INFO"), e))?;
        let out = &mut self.out;
        if let Some(b) = &self.plan.bpf {
            out.bpf_counters = bpfcc::read(b.algorithm, b.storage_fd, fd, info.tcpi_snd_mss)
                .map_err(|e| EmuError::bpf(format!("flows[{f}]"), e))?
                .counters;
        }
        out.total_retrans = info.tcpi_total_retrans as u64;
        out.total_rto = info.tcpi_total_rto as u64;
        out.total_rto_recoveries = info.tcpi_total_rto_recoveries as u64;
        out.data_segs_out = info.tcpi_data_segs_out as u64;
        out.segs_in = info.tcpi_segs_in as u64;
        out.bytes_retrans = info.tcpi_bytes_retrans;
        out.dsack_dups = info.tcpi_dsack_dups as u64;
        out.reord_seen = info.tcpi_reord_seen as u64;
        out.min_rtt_us = Sample::from_info(&info, None).min_rtt_us;
        out.ecn_negotiated = info.ecn_negotiated();
        out.mean_srtt_us = if self.srtt_count == 0 {
            f64::NAN
        } else {
            self.srtt_sum_us / self.srtt_count as f64
        };
        let after = read_netstat();
        out.netstat = after
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.saturating_sub(*netstat_before.get(k).unwrap_or(&0)),
                )
            })
            .collect();
        Ok(self.out)
    }
}
